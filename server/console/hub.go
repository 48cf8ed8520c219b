package console

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// maxDirty bounds the changed agents a hub remembers between two ticks;
// beyond it a tick counts as "everything changed".
const maxDirty = 4096

// hub turns the registry's change notifications into wake-ups of live
// streams, coalesced: each subscriber is woken at most once per interval
// (or every few intervals, as it asked), and only for changes it asked
// about. Notifications never block: a subscriber that has not taken its
// last wake-up just stays woken.
type hub struct {
	interval time.Duration
	active   atomic.Int32 // subscribers; with none, changes are not recorded

	mu      sync.Mutex
	dirty   map[uuid.UUID]struct{}   // guarded by mu
	all     bool                     // guarded by mu
	changed bool                     // guarded by mu
	subs    map[*subscriber]struct{} // guarded by mu

	stop chan struct{}
	done chan struct{}
}

// subscriber is one live stream's interest.
type subscriber struct {
	uids  map[uuid.UUID]struct{} // nil: every change
	every int                    // wake at most once per this many ticks
	wake  chan struct{}          // capacity 1

	// guarded by hub.mu
	pending bool // a change it asked about since its last wake-up
	waited  int  // ticks since its last wake-up
}

func newHub(interval time.Duration) *hub {
	h := &hub{interval: interval, dirty: map[uuid.UUID]struct{}{}, subs: map[*subscriber]struct{}{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go h.run()
	return h
}

// change records that an agent changed. It is called by the registry and
// the OpAMP hook, possibly under their locks: it only takes the hub's.
func (h *hub) change(uid uuid.UUID) {
	if h.active.Load() == 0 {
		return
	}
	h.mu.Lock()
	if !h.all {
		if len(h.dirty) >= maxDirty {
			h.all = true
			clear(h.dirty)
		} else {
			h.dirty[uid] = struct{}{}
		}
	}
	h.changed = true
	h.mu.Unlock()
}

// changeAll records a change that may concern every view (an estate reload).
func (h *hub) changeAll() {
	h.mu.Lock()
	h.all, h.changed = true, true
	clear(h.dirty)
	h.mu.Unlock()
}

// subscribe registers interest in the given agents (none: every change),
// to be woken at most once every `every` ticks.
func (h *hub) subscribe(uids []uuid.UUID, every int) *subscriber {
	s := &subscriber{wake: make(chan struct{}, 1), every: max(1, every)}
	if len(uids) > 0 {
		s.uids = make(map[uuid.UUID]struct{}, len(uids))
		for _, u := range uids {
			s.uids[u] = struct{}{}
		}
	}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	h.active.Add(1)
	return s
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		h.active.Add(-1)
	}
	h.mu.Unlock()
}

func (h *hub) run() {
	defer close(h.done)
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		h.tick()
	}
}

// tick wakes the subscribers whose interest changed since their last
// wake-up and who have waited their number of ticks.
func (h *hub) tick() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.waited++
		if h.changed && (h.all || s.uids == nil || intersects(s.uids, h.dirty)) {
			s.pending = true
		}
		if !s.pending || s.waited < s.every {
			continue
		}
		s.pending, s.waited = false, 0
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	h.all, h.changed = false, false
	if len(h.dirty) > 0 {
		h.dirty = map[uuid.UUID]struct{}{}
	}
}

func intersects(a, b map[uuid.UUID]struct{}) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	for k := range a {
		if _, ok := b[k]; ok {
			return true
		}
	}
	return false
}

func (h *hub) close() {
	close(h.stop)
	<-h.done
}
