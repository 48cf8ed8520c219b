package console

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/google/uuid"
)

func jsonInto(b []byte, out any) error { return json.Unmarshal(b, out) }

// redirectDone ends an action: it redirects to the page at path, which
// shows msg once. The message stays in the session; the URL names it by
// a key only that session can take, so no link can make a page say that
// something happened.
func (c *Console) redirectDone(w http.ResponseWriter, r *http.Request, s *session, path, msg string) {
	k := c.sessions.addFlash(s, path, msg)
	http.Redirect(w, r, path+"?"+url.Values{"done": {k}}.Encode(), http.StatusSeeOther)
}

// flash is the message an action of session s left for this page, once.
func (c *Console) flash(r *http.Request, s *session) string {
	return c.sessions.takeFlash(s, r.URL.Path, r.URL.Query().Get("done"))
}

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
	c.agentPost(w, r, s, "/retry", "Failed offers cleared; the offer is evaluated again.")
}

// agentConfigRetry clears an agent's failed config
// (POST /api/v1/agents/{uid}/config/retry).
func (c *Console) agentConfigRetry(w http.ResponseWriter, r *http.Request, s *session) {
	c.agentPost(w, r, s, "/config/retry", "Failed configuration cleared; it is offered again.")
}

func (c *Console) agentPost(w http.ResponseWriter, r *http.Request, s *session, route, msg string) {
	uid, err := uuid.Parse(r.PathValue("uid"))
	if err != nil {
		c.fail(w, r, s, http.StatusNotFound, "Not an instance UID.")
		return
	}
	if _, err := c.api.call(r.Context(), http.MethodPost, "/api/v1/agents/"+uid.String()+route, nil); err != nil {
		c.failAPI(w, r, s, err)
		return
	}
	c.redirectDone(w, r, s, "/agents/"+uid.String(), msg)
}
