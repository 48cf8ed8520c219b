package registry

import (
	"bytes"
	"slices"
	"sort"

	"github.com/google/uuid"
)

// The registry keeps its UIDs in order so listings page through them
// without sorting every agent per request. New registrations go to an
// unsorted tail that the next listing merges in; pruning builds a new order
// without the pruned (see prune.go).

// noteNewLocked records a new UID; caller holds r.mu for writing.
func (r *Registry) noteNewLocked(uid uuid.UUID) {
	r.unsorted = append(r.unsorted, uid)
}

// sortedUIDs returns every UID in order. The slice is never modified after
// it is returned (a merge builds a new one), so callers may keep it without
// the lock.
func (r *Registry) sortedUIDs() []uuid.UUID {
	r.mu.RLock()
	order, pending := r.order, len(r.unsorted)
	r.mu.RUnlock()
	if pending == 0 {
		return order
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.unsorted) > 0 {
		add := r.unsorted
		r.unsorted = nil
		slices.SortFunc(add, compareUID)
		merged := make([]uuid.UUID, 0, len(r.order)+len(add))
		i, j := 0, 0
		for i < len(r.order) && j < len(add) {
			if compareUID(r.order[i], add[j]) < 0 {
				merged = append(merged, r.order[i])
				i++
			} else {
				merged = append(merged, add[j])
				j++
			}
		}
		merged = append(merged, r.order[i:]...)
		r.order = append(merged, add[j:]...)
	}
	return r.order
}

func compareUID(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }

// PageQuery selects a page of agents.
type PageQuery struct {
	// Kind "" means all kinds.
	Kind Kind
	// After, when set, starts the page at the first UID greater than it.
	After    uuid.UUID
	HasAfter bool
	// Limit bounds the page (0: no bound).
	Limit int
	// WithEvents includes the event histories.
	WithEvents bool
}

// Page returns snapshots of the agents q selects, in UID order, and whether
// more agents follow the page. The read lock is held only while the page's
// snapshots are taken, so a listing in small pages never holds up reports
// for long.
func (r *Registry) Page(q PageQuery) (page []Agent, more bool) {
	return r.AppendPage(nil, q)
}

// AppendPage is Page appending to dst, so a walk over every agent in pages
// can reuse one buffer.
func (r *Registry) AppendPage(dst []Agent, q PageQuery) (page []Agent, more bool) {
	order := r.sortedUIDs()
	start := 0
	if q.HasAfter {
		start = sort.Search(len(order), func(i int) bool { return compareUID(order[i], q.After) > 0 })
	}
	n := len(order) - start
	if q.Limit > 0 {
		n = min(n, q.Limit)
	}
	page = slices.Grow(dst, n)
	limit := len(dst) + q.Limit
	r.mu.RLock()
	defer r.mu.RUnlock()
	now := r.opts.Now()
	for _, uid := range order[start:] {
		a := r.agents[uid]
		if a == nil || (q.Kind != "" && a.kind.Kind() != q.Kind) { // nil: pruned since order was taken
			continue
		}
		if q.Limit > 0 && len(page) == limit {
			return page, true
		}
		page = append(page, a.snapshot(now, r.opts.HTTPOnlineWindow, q.WithEvents))
	}
	return page, false
}
