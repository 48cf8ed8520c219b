package admin

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/google/uuid"
)

// AgentAction adds an operator action on one agent: op runs fn for the
// agent's instance UID where the feature decides (see Actions), and
// "POST pattern" (with {uid}) performs it and answers the agent as the API
// shows it. A UID that does not parse, or that fn refuses, is a 404 naming
// the agent as noun does ("collector", "configured agent").
func (a *API) AgentAction(actions *Actions, pattern, op, noun string, fn func(uuid.UUID) error) {
	parse := func(s string) (uuid.UUID, error) {
		uid, err := uuid.Parse(s)
		if err != nil {
			return uid, fmt.Errorf("no %s %q: not an instance UID", noun, s)
		}
		return uid, nil
	}
	actions.Add(op, func(_ context.Context, args []string) (string, error) {
		uid, err := parse(args[0])
		if err != nil {
			return "", err
		}
		return "", fn(uid)
	})
	a.Handle("POST "+pattern, func(w http.ResponseWriter, r *http.Request) {
		uid, err := parse(r.PathValue("uid"))
		if err == nil {
			_, err = actions.Do(r.Context(), op, uid.String())
		}
		if err != nil {
			WriteActionError(w, http.StatusNotFound, err)
			return
		}
		ag, _ := a.d.Registry.Get(uid)
		WriteJSON(w, http.StatusOK, a.AgentJSON(&ag))
	})
}

// FleetRetry adds a fleet-wide operator action: op runs fn for the fleet
// named in the path where the feature decides, and "POST pattern" (with
// {name}) answers {"retried": n}, the agents it retried; fn's error (no
// such fleet) is a 404.
func (a *API) FleetRetry(actions *Actions, pattern, op string, fn func(fleet string) (int, error)) {
	actions.Add(op, func(_ context.Context, args []string) (string, error) {
		n, err := fn(args[0])
		return strconv.Itoa(n), err
	})
	a.Handle("POST "+pattern, func(w http.ResponseWriter, r *http.Request) {
		out, err := actions.Do(r.Context(), op, r.PathValue("name"))
		if err != nil {
			WriteActionError(w, http.StatusNotFound, err)
			return
		}
		n, _ := strconv.Atoi(out)
		WriteJSON(w, http.StatusOK, map[string]any{"retried": n})
	})
}
