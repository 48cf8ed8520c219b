package registry

import (
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// ErrNotDurable: the first binding of an instance UID to its credential
// could not be written, so the agent is not answered as registered; it
// should retry (the registry keeps trying to write it).
var ErrNotDurable = errors.New("agent registration not yet persisted")

// makeDurable writes what is pending (uid's new row among it) now, instead
// of at the next tick of the write-behind loop: the binding of a new
// instance UID to its credential must survive a crash right after the
// agent has been answered. Registrations arriving together share one write
// (a later caller finds its row already written by the flush it waited
// for). Heartbeats are not written here: they stay coalesced.
func (r *Registry) makeDurable(uid uuid.UUID) error {
	err := r.flush(false)
	r.mu.RLock()
	a, ok := r.agents[uid]
	durable := !ok || a.persisted
	r.mu.RUnlock()
	if durable {
		return nil
	}
	if err == nil {
		err = errors.New("not written")
	}
	return fmt.Errorf("%w: agent %s: %w", ErrNotDurable, uid, err)
}
