package console

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/google/uuid"
)

func jsonInto(b []byte, out any) error { return json.Unmarshal(b, out) }

// failAPI shows an admin API refusal with its status and message.
func (c *Console) failAPI(w http.ResponseWriter, r *http.Request, s *session, err error) {
	status := http.StatusBadGateway
	if ae, ok := err.(*apiError); ok {
		status = ae.Status
	}
	c.fail(w, r, s, status, err.Error())
}

// agentRetry clears an agent's failed offers (POST /api/v1/agents/{uid}/retry).
func (c *Console) agentRetry(w http.ResponseWriter, r *http.Request, s *session) {
	c.agentPost(w, r, s, "/retry", "offer-retried")
}

// agentConfigRetry clears an agent's failed config
// (POST /api/v1/agents/{uid}/config/retry).
func (c *Console) agentConfigRetry(w http.ResponseWriter, r *http.Request, s *session) {
	c.agentPost(w, r, s, "/config/retry", "config-retried")
}

func (c *Console) agentPost(w http.ResponseWriter, r *http.Request, s *session, route, done string) {
	uid, err := uuid.Parse(r.PathValue("uid"))
	if err != nil {
		c.fail(w, r, s, http.StatusNotFound, "Not an instance UID.")
		return
	}
	if _, err := c.api.call(r.Context(), http.MethodPost, "/api/v1/agents/"+uid.String()+route, nil); err != nil {
		c.failAPI(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/agents/"+uid.String()+"?"+url.Values{"done": {done}}.Encode(), http.StatusSeeOther)
}
