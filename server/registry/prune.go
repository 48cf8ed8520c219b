package registry

import (
	"slices"
	"time"

	"github.com/google/uuid"
)

// prune forgets the agents that have been offline for longer than
// Options.PruneAfter: removed from memory and from the store with their
// history, each logged. One that comes back registers anew. Observers are
// told, and find the agent gone.
func (r *Registry) prune() {
	if r.opts.PruneAfter <= 0 {
		return
	}
	now := r.opts.Now()
	limit := now.Add(-r.opts.PruneAfter)
	type gone struct {
		uid      uuid.UUID
		kind     Kind
		lastSeen time.Time
	}
	var pruned []gone
	r.mu.Lock()
	for uid, a := range r.agents {
		if a.conns > 0 || a.online(now, r.opts.HTTPOnlineWindow) || !a.lastSeen.Time().Before(limit) {
			continue
		}
		pruned = append(pruned, gone{uid, a.kind.Kind(), a.lastSeen.Time()})
		r.removeLocked(uid, a, true)
	}
	if len(pruned) > 0 {
		r.reorderLocked()
	}
	r.mu.Unlock()
	if len(pruned) == 0 {
		return
	}
	uids := make([]uuid.UUID, len(pruned))
	for i, g := range pruned {
		uids[i] = g.uid
		r.log.Info("agent pruned: offline for longer than the prune age", "agent", g.uid, "kind", g.kind,
			"last_seen", g.lastSeen, "prune_after", r.opts.PruneAfter)
	}
	_ = r.flush(false) // on failure the deletes are retried with the next flush
	r.notify(uids...)
}

// removeLocked forgets an agent in memory, and in the store when del
// (with the next flush).
func (r *Registry) removeLocked(uid uuid.UUID, a *agent, del bool) {
	delete(r.agents, uid)
	delete(r.pendingRows, uid)
	delete(r.pendingSeen, uid)
	delete(r.pendingEvents, uid)
	if del {
		r.pendingDeletes = append(r.pendingDeletes, uid)
	}
	*a = agent{} // agents loaded at start share one array: let go of what this one held
}

// reorderLocked drops the removed agents from the listing orders.
func (r *Registry) reorderLocked() {
	keep := func(u uuid.UUID) bool { _, ok := r.agents[u]; return ok }
	order := make([]uuid.UUID, 0, len(r.order))
	for _, u := range r.order {
		if keep(u) {
			order = append(order, u)
		}
	}
	r.order = order // a new slice: listings may hold the old one
	r.unsorted = slices.DeleteFunc(r.unsorted, func(u uuid.UUID) bool { return !keep(u) })
}
