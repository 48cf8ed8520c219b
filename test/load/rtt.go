//go:build linux

package main

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// rttRecorder keeps the round trips of heartbeats (sent → the server's
// answer read) while on: a phase turns it on, and takes what it recorded.
type rttRecorder struct {
	on atomic.Bool
	mu sync.Mutex
	d  []time.Duration // guarded by mu
}

// maxRTTs bounds what one phase records.
const maxRTTs = 1 << 20

func (r *rttRecorder) add(d time.Duration) {
	if !r.on.Load() {
		return
	}
	r.mu.Lock()
	if len(r.d) < maxRTTs {
		r.d = append(r.d, d)
	}
	r.mu.Unlock()
}

// start drops what was recorded and records from now on.
func (r *rttRecorder) start() {
	r.mu.Lock()
	r.d = r.d[:0]
	r.mu.Unlock()
	r.on.Store(true)
}

// stop ends recording and returns the round trips, sorted.
func (r *rttRecorder) stop() []time.Duration {
	r.on.Store(false)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.d)
	slices.Sort(out)
	return out
}
