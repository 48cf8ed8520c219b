package registry

import (
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/store"
)

// Merge takes agents that another myriarchd instance sharing the database
// wrote (records with their newest events, as the store holds them): new
// agents are added, known ones replaced. When the store reads histories
// (store.History), a merged agent's history is not kept in memory: Get
// reads it from the store. An agent connected to this
// instance keeps what this instance knows: its own record is the newer
// one. Nothing merged is written back. Observers are told of every agent
// merged. leaseUntil marks a merged agent online (connected elsewhere)
// until then.
func (r *Registry) Merge(recs []store.Agent, events map[[16]byte][]store.Event, leaseUntil func(lastSeen time.Time) time.Time) int {
	dd := newDescDecoder()
	var merged []uuid.UUID
	r.mu.Lock()
	for i := range recs {
		uid := uuid.UUID(recs[i].UID)
		a, ok := r.agents[uid]
		if ok && a.conns > 0 {
			continue
		}
		fresh := &agent{}
		r.fromRecord(dd, fresh, &recs[i], events[recs[i].UID])
		if r.history != nil {
			fresh.events, fresh.historyInStore = nil, true // numbering continues from nextSeq
		}
		if ok {
			fresh.leftAt = a.leftAt
		}
		fresh.remoteUntil = fresh.leaseFor(recs[i].LastSeen, leaseUntil)
		if ok {
			*a = *fresh
		} else {
			r.agents[uid] = fresh
			r.noteNewLocked(uid)
		}
		merged = append(merged, uid)
	}
	r.mu.Unlock()
	r.notify(merged...)
	return len(merged)
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
	return ok && a.conns == 0 && r.opts.Now().Before(a.remoteUntil)
}

// SeenElsewhere renews the leases of agents connected to other instances:
// seen holds the last-seen times the database has (written by the
// instance each agent is connected to); an agent not connected here is
// online until leaseUntil of its time. Observers are told of agents that
// come online or go offline by it.
func (r *Registry) SeenElsewhere(seen map[[16]byte]time.Time, leaseUntil func(lastSeen time.Time) time.Time) {
	now := r.opts.Now()
	var changed []uuid.UUID
	r.mu.Lock()
	for _, a := range r.agents {
		if a.conns > 0 {
			continue
		}
		was := a.online(now, r.opts.HTTPOnlineWindow)
		if t, ok := seen[a.uid]; ok {
			a.remoteUntil = a.leaseFor(t, leaseUntil)
			if t.After(a.lastSeen) {
				a.lastSeen = t
			}
		} else {
			a.remoteUntil = time.Time{}
		}
		if a.online(now, r.opts.HTTPOnlineWindow) != was {
			changed = append(changed, a.uid)
		}
	}
	r.mu.Unlock()
	r.notify(changed...)
}
