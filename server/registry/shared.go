package registry

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/store"
)

// What a registry does for instances sharing a store, beside merging the
// others' agents (remote.go): it writes its agents' reports for the
// instance that acts on them, records the events other instances relay to
// it, and takes the word of another instance that an agent left it.

type reportKey struct {
	uid     uuid.UUID
	feature string
}

// SetReport queues an agent's report of one feature (see store.Report),
// written with the next flush; a newer report of the same feature replaces
// one still queued.
func (r *Registry) SetReport(uid uuid.UUID, feature string, at time.Time, data []byte) {
	r.mu.Lock()
	k := reportKey{uid, feature}
	if old, ok := r.pendingReports[k]; !ok || !old.At.After(at) {
		r.pendingReports[k] = store.Report{UID: uid, Feature: feature, At: at, Data: data}
	}
	r.mu.Unlock()
}

// AddEvents appends events another instance recorded about uid (relayed to
// the instance it is connected to, which writes its history): their times,
// types and messages are kept, their sequence numbers are this registry's.
// False if the agent is unknown.
func (r *Registry) AddEvents(uid uuid.UUID, evs []store.Event) bool {
	r.mu.Lock()
	a, ok := r.agents[uid]
	if ok {
		for _, e := range evs {
			r.addEventLocked(a, e.Time, e.Type, e.Message)
		}
	}
	r.mu.Unlock()
	if ok && len(evs) > 0 {
		r.notifyWatchers(uid)
	}
	return ok
}

// Connected returns those of uids with a WebSocket open to this instance.
func (r *Registry) Connected(uids []uuid.UUID) []uuid.UUID {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []uuid.UUID
	for _, uid := range uids {
		if a, ok := r.agents[uid]; ok && a.connectedHere(r.opts.Instance) {
			out = append(out, uid)
		}
	}
	return out
}

// storedHistory is the history of an agent merged from another instance's
// record: the newest MaxEvents the store holds, then those recorded here
// and not yet there (newer).
func (r *Registry) storedHistory(uid uuid.UUID, here []store.Event) []store.Event {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stored, err := r.history.LoadEvents(ctx, uid, MaxEvents)
	if err != nil {
		r.log.Warn("reading an agent's history from the store failed; showing what this instance recorded", "agent", uid, "err", err)
		return here
	}
	var last uint64
	if n := len(stored); n > 0 {
		last = stored[n-1].Seq
	}
	out := stored
	for _, e := range here {
		if e.Seq > last {
			out = append(out, e)
		}
	}
	if len(out) > MaxEvents {
		out = out[len(out)-MaxEvents:]
	}
	return out
}
