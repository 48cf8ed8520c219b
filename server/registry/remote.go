package registry

import (
	"bytes"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/stamp"
	"github.com/myriarch/myriarch/server/store"
)

// Merge takes agents that another myriarchd instance sharing the database
// wrote (records with their newest events, as the store holds them): new
// agents are added, known ones replaced. When the store reads histories
// (store.History), a merged agent's history is not kept in memory: Get
// reads it from the store. An agent connected to this instance keeps what
// this instance knows: its own record is the newer one, unless the row
// names a newer connection of the agent to another instance, which
// replaces those here (see elsewhere.go). Nothing merged is written back.
// Observers are told of every agent merged.
//
// A merged agent is online while the instance its row names (its
// WebSocket's) lives, as the last lease sweep found (SeenElsewhere); one
// connected to no instance until leaseUntil of its last-seen time, unless
// its connection was seen closing at or after that time.
func (r *Registry) Merge(recs []store.Agent, events map[[16]byte][]store.Event, leaseUntil func(lastSeen time.Time) time.Time) int {
	dd := newDescDecoder()
	n := 0
	for batch := range slices.Chunk(recs, mergeHold) {
		merged, replaced := r.mergeSome(dd, batch, events, leaseUntil)
		r.notify(merged...)
		r.tellReplaced(replaced)
		n += len(merged)
	}
	return n
}

// mergeHold bounds the records Merge replaces under one hold of the
// registry's lock: the agents connected here report meanwhile.
const mergeHold = 256

// mergeSome merges recs under one hold of the lock and returns those
// merged, and the agents connected here that a newer connection to
// another instance replaced.
func (r *Registry) mergeSome(dd *descDecoder, recs []store.Agent, events map[[16]byte][]store.Event,
	leaseUntil func(lastSeen time.Time) time.Time) (merged []uuid.UUID, replaced []ReplacedElsewhere) {
	merged = make([]uuid.UUID, 0, len(recs))
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range recs {
		uid := uuid.UUID(recs[i].UID)
		a, ok := r.agents[uid]
		if ok && a.connectedHere(r.opts.Instance) {
			rep, yield := r.contestLocked(a, &recs[i])
			if !yield {
				continue
			}
			// Merged as an agent connected to that instance; the
			// connections here close.
			replaced = append(replaced, rep)
			a.leftAt = 0
			delete(r.pendingRows, uid)
		}
		fresh := &agent{}
		var held *agent
		if ok {
			held = a
		}
		r.fromRecord(dd, fresh, &recs[i], events[recs[i].UID], held)
		if r.history != nil {
			fresh.events, fresh.historyInStore = nil, true // numbering continues from nextSeq
		}
		if ok {
			fresh.conns = a.conns // connections here replaced, closing
			fresh.leftAt = a.leftAt
			if a.instance != nil && fresh.instance == nil && recs[i].LastSeen.After(fresh.leftAt.Time()) {
				fresh.leftAt = stamp.Of(recs[i].LastSeen) // its connection closed then
			}
		}
		fresh.remoteUntil = stamp.Of(r.leaseLocked(fresh, recs[i].LastSeen, leaseUntil))
		if ok {
			*a = *fresh
		} else {
			r.agents[uid] = fresh
			r.noteNewLocked(uid)
		}
		merged = append(merged, uid)
	}
	return merged, replaced
}

// leaseLocked is when an agent not connected here stops counting as
// online: with the instance its WebSocket is open to, or for one
// connected to none, leaseUntil of lastSeen unless it left since. Caller
// holds r.mu.
func (r *Registry) leaseLocked(a *agent, lastSeen time.Time, leaseUntil func(time.Time) time.Time) time.Time {
	if name := a.instanceName(); name != "" && name != r.opts.Instance {
		if until, ok := r.live[name]; ok {
			return until
		}
		// An instance the last sweep did not know (it started since) wrote
		// this row: it lived then.
		return leaseUntil(lastSeen)
	}
	if !lastSeen.After(a.leftAt.Time()) {
		return time.Time{}
	}
	return leaseUntil(lastSeen)
}

// MergeEvents is how many of an agent's newest events Merge needs: all it
// keeps (MaxEvents), or when histories are read from the store only the
// newest, which its numbering continues.
func (r *Registry) MergeEvents() int {
	if r.history != nil {
		return 1
	}
	return MaxEvents
}

// Elsewhere reports whether uid is connected to another instance (not
// here, and its lease there has not ended): that instance writes its
// record, not this one.
func (r *Registry) Elsewhere(uid uuid.UUID) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.agents[uid]
	return ok && !a.connectedHere(r.opts.Instance) && r.opts.Now().Before(a.remoteUntil.Time())
}

// SeenElsewhere renews the leases of agents connected to other instances:
// live holds when each instance sharing the database last said it lives,
// seen the last-seen times of agents connected to none (plain HTTP, or
// gone) as the database has them. An agent whose row names an instance is
// online while that instance's lease lasts (leaseUntil of its time); one
// connected to none until leaseUntil of its time. Observers are told of
// agents that come online or go offline by it.
func (r *Registry) SeenElsewhere(seen map[[16]byte]time.Time, live map[string]time.Time, leaseUntil func(lastSeen time.Time) time.Time) {
	now := r.opts.Now()
	var changed []uuid.UUID
	r.mu.Lock()
	r.live = make(map[string]time.Time, len(live))
	for id, t := range live {
		r.live[id] = leaseUntil(t)
	}
	for _, a := range r.agents {
		if a.connectedHere(r.opts.Instance) {
			continue
		}
		was := a.online(now, r.opts.HTTPOnlineWindow)
		t, ok := seen[a.uid]
		if ok && t.After(a.lastSeen.Time()) {
			a.lastSeen = stamp.Of(t)
		}
		switch name := a.instanceName(); {
		case name != "" && name != r.opts.Instance:
			a.remoteUntil = stamp.Of(r.live[name])
		case ok:
			a.remoteUntil = stamp.Of(r.leaseLocked(a, t, leaseUntil))
		default:
			a.remoteUntil = 0
		}
		if a.online(now, r.opts.HTTPOnlineWindow) != was {
			changed = append(changed, a.uid)
		}
	}
	r.mu.Unlock()
	r.notify(changed...)
}

// Outdated returns those of recs (rows as the store holds them, with
// their newest events) that Merge would change: agents this instance does
// not hold, agents connected here whose row names another instance or
// none, and agents not connected here whose row differs from what it
// holds (kind, description, capabilities, health, token labels, extra,
// instance) or that have an event newer than its newest. An instance
// about to decide for every agent merges them first: the notifications
// that would bring them may still be queued.
func (r *Registry) Outdated(recs []store.Agent, events map[[16]byte][]store.Event) []store.Agent {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []store.Agent
	for i := range recs {
		rec := &recs[i]
		a, ok := r.agents[uuid.UUID(rec.UID)]
		switch {
		case !ok:
		case a.connectedHere(r.opts.Instance):
			if rec.Instance == r.opts.Instance {
				continue
			}
			// Another instance's connection, or none: Merge decides.
		case a.sameRow(rec) && !newerEvent(events[rec.UID], a.nextSeq):
			continue
		}
		out = append(out, *rec)
	}
	return out
}

// sameRow reports whether rec holds what a does of its row.
func (a *agent) sameRow(rec *store.Agent) bool {
	if string(a.kind.Kind()) != rec.Kind || *a.cred != rec.Credential || a.capabilities != rec.Capabilities ||
		a.instanceName() != rec.Instance || a.descSum != descSumOf(rec.Description) || !bytes.Equal(a.extraBytes(), rec.Extra) ||
		!maps.Equal(a.tokenLabels, rec.TokenLabels) {
		return false
	}
	return a.health == string(rec.Health) // rows hold the deterministic encoding
}

func newerEvent(evs []store.Event, next uint64) bool {
	return len(evs) > 0 && evs[len(evs)-1].Seq > next
}
