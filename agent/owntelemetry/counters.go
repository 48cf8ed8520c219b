// Package owntelemetry exports the updater's own metrics and logs to the
// OTLP/HTTP destinations its server offers (OpAMP own_metrics and
// own_logs), with the OpenTelemetry Go SDK. Without an offer nothing is
// exported and nothing listens: the updater serves nothing on the network.
package owntelemetry

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/myriarch/myriarch/agent/install"
)

// Counters keeps what the metrics report, from the updater's start on,
// whether or not a destination is offered (a counter that starts when an
// offer arrives would lie about what came before). It is an
// install.Observer. Safe for concurrent use.
type Counters struct {
	downloads, downloadBytes, verifyFailures atomic.Int64
	snapshotBytes, snapshots                 atomic.Int64

	mu       sync.Mutex
	installs map[installKey]*installSum // guarded by mu
}

type installKey struct{ pkg, outcome, fault string }

type installSum struct {
	n       int64
	seconds float64
}

var _ install.Observer = (*Counters)(nil)

// NewCounters makes zeroed counters.
func NewCounters() *Counters { return &Counters{installs: map[installKey]*installSum{}} }

// Finished implements install.Observer.
func (c *Counters) Finished(pkg string, took time.Duration, outcome, fault string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := installKey{pkg, outcome, fault}
	s := c.installs[k]
	if s == nil {
		s = &installSum{}
		c.installs[k] = s
	}
	s.n++
	s.seconds += took.Seconds()
}

// Downloaded implements install.Observer.
func (c *Counters) Downloaded(bytes int64) {
	c.downloads.Add(1)
	c.downloadBytes.Add(bytes)
}

// VerificationFailed implements install.Observer.
func (c *Counters) VerificationFailed() { c.verifyFailures.Add(1) }

// SnapshotSent counts a providers snapshot of size bytes sent to the server.
func (c *Counters) SnapshotSent(size int) {
	c.snapshots.Add(1)
	c.snapshotBytes.Store(int64(size))
}

// installRow is one (package, outcome, fault) with its count and time.
type installRow struct {
	installKey
	installSum
}

func (c *Counters) installRows() []installRow {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]installRow, 0, len(c.installs))
	for k, s := range c.installs {
		out = append(out, installRow{k, *s})
	}
	return out
}
