package cluster

import (
	"maps"
	"sync"
	"time"
)

// KindStats is what a notifier did with one kind of the other instances'
// changes since it started.
type KindStats struct {
	// Applied counts the changes handed to the handler (a backlog
	// coalesced is one), Resyncs those that reloaded the kind in full, and
	// Failed those the handler could not apply (read again later).
	Applied, Resyncs, Failed int64
	// Busy is the time the handler took over them.
	Busy time.Duration
}

// Stats is a notifier's account of the changes it received.
type Stats struct {
	// Queued is how many changes wait to be applied now.
	Queued int
	Kinds  map[string]KindStats
}

// handled keeps the per-kind counts; safe for concurrent use.
type handled struct {
	mu    sync.Mutex
	kinds map[string]KindStats // guarded by mu
}

func (h *handled) add(c Change, took time.Duration, failed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.kinds == nil {
		h.kinds = map[string]KindStats{}
	}
	k := h.kinds[c.Kind]
	k.Applied++
	if c.Resync {
		k.Resyncs++
	}
	if failed {
		k.Failed++
	}
	k.Busy += took
	h.kinds[c.Kind] = k
}

func (h *handled) snapshot() map[string]KindStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.kinds)
}

// Stats reports what the notifier did with the other instances' changes:
// an instance that falls behind them shows a growing queue, time busy
// near the time passed, and resyncs.
func (n *Notifier) Stats() Stats {
	return Stats{Queued: len(n.queue), Kinds: n.handled.snapshot()}
}
