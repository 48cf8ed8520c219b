package keyrings

import (
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/registry"
)

// AgentJSON is an updater's "keyring" in the agents API.
type AgentJSON struct {
	// Serial is the serial in force on the host, Estate the estate's.
	Serial uint64 `json:"serial"`
	Estate uint64 `json:"estate"`
	State  string `json:"state"`
	// Error is why the updater refused a keyring (its ID first).
	Error string `json:"error,omitempty"`
}

// Routes shows each updater's keyring in the agents API.
func (e *Engine) Routes(api *admin.API) {
	api.AddDecorator(admin.LockedDecorator{Mu: &e.mu, Locked: e.decorateLocked})
}

func (e *Engine) decorateLocked(a *registry.Agent, j *admin.Agent) {
	m := e.members[a.UID]
	if m == nil {
		return
	}
	o := e.cur.Load()
	st := e.stateLocked(m, o)
	out := AgentJSON{Serial: st.Serial, State: st.State, Error: st.Error}
	if o != nil {
		out.Estate = o.serial
	}
	j.Keyring = out
}
