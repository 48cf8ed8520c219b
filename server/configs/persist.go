package configs

import (
	"context"
	"encoding/hex"
	"errors"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/store"
)

// kick asks the writer to flush soon. Caller holds e.mu.
func (e *Engine) kick() {
	if len(e.dirty) > 0 || len(e.newBodies) > 0 || len(e.gone) > 0 {
		e.requestFlush()
	}
}

func (e *Engine) requestFlush() {
	if e.writes != nil { // nil while New evaluates: it flushes before it returns
		e.writes.Request()
	}
}

// flush writes what changed since the last flush in one batch; on failure
// it is kept for the next one.
func (e *Engine) flush() {
	e.mu.Lock()
	b := store.ConfigBatch{Assignments: make(map[[16]byte][]byte, len(e.dirty)), Bodies: e.newBodies, DeleteBodies: e.gone}
	for uid := range e.dirty {
		if r := e.records[uid]; r != nil {
			b.Assignments[uid] = r.persisted().marshal()
		}
	}
	dirty := e.dirty
	e.dirty, e.newBodies, e.gone = map[uuid.UUID]struct{}{}, map[string][]byte{}, nil
	lead := e.role.Leads()
	e.mu.Unlock()
	if !lead {
		return // a follower writes no decisions (it has none)
	}
	err := e.st.WriteConfigs(context.Background(), b)
	if errors.Is(err, store.ErrNotLeader) {
		// The leader that took over decides again from what it finds.
		e.log.Info("configuration decisions not written: this instance no longer leads", "agents", len(b.Assignments))
		return
	}
	if err != nil {
		e.log.Error("persisting configuration assignments failed; retrying", "err", err)
		e.mu.Lock()
		for uid := range dirty {
			e.dirty[uid] = struct{}{}
		}
		for h, body := range b.Bodies {
			if _, ok := e.bodies[h]; ok {
				e.newBodies[h] = body
			}
		}
		e.gone = append(e.gone, b.DeleteBodies...)
		e.mu.Unlock()
	}
}

// saveFleets writes changed rollout states. Caller holds e.mu; the writes
// are small and rare (a failure, a pause, a new revision).
func (e *Engine) saveFleets() {
	if !e.role.Leads() {
		return
	}
	for name, f := range e.fleets {
		if !f.dirty {
			continue
		}
		f.dirty = false
		e.rollouts.Put(name, f.rolloutState)
	}
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }
