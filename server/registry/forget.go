package registry

import (
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// Errors of Forget.
var (
	ErrUnknownAgent = errors.New("no such agent")
	ErrAgentOnline  = errors.New("the agent is online")
)

// Forget removes an offline agent, as pruning does, at an operator's
// request: from memory and, written at once, from the store with its
// history. Observers are told and find it gone; instances sharing the
// store drop it when they read that its row is gone (Gone). One that
// comes back registers anew. An agent online here or on another instance
// is refused (ErrAgentOnline), an unknown one too (ErrUnknownAgent).
func (r *Registry) Forget(uid uuid.UUID) error {
	now := r.opts.Now()
	r.mu.Lock()
	a, ok := r.agents[uid]
	switch {
	case !ok:
		r.mu.Unlock()
		return fmt.Errorf("agent %s: %w", uid, ErrUnknownAgent)
	case a.conns > 0 || a.online(now, r.opts.HTTPOnlineWindow):
		r.mu.Unlock()
		return fmt.Errorf("agent %s: %w; an agent is forgotten once it is offline", uid, ErrAgentOnline)
	}
	kind, lastSeen := a.kind.Kind(), a.lastSeen.Time()
	r.removeLocked(uid, a, true)
	r.reorderLocked()
	r.mu.Unlock()
	r.log.Info("agent forgotten by an operator", "agent", uid, "kind", kind, "last_seen", lastSeen)
	err := r.flush(false)
	r.notify(uid)
	if err != nil {
		return fmt.Errorf("agent %s forgotten here; removing it from the store failed (retried with the next write): %w", uid, err)
	}
	return nil
}

// Gone drops the agents of uids whose rows another instance sharing the
// store deleted (forgotten or pruned there), unless one is connected here:
// its next write brings its row back. Observers are told.
func (r *Registry) Gone(uids []uuid.UUID) {
	var dropped []uuid.UUID
	r.mu.Lock()
	for _, uid := range uids {
		if a, ok := r.agents[uid]; ok && !a.connectedHere(r.opts.Instance) && a.conns == 0 {
			r.removeLocked(uid, a, false)
			dropped = append(dropped, uid)
		}
	}
	if len(dropped) > 0 {
		r.reorderLocked()
	}
	r.mu.Unlock()
	if len(dropped) > 0 {
		r.notify(dropped...)
	}
}
