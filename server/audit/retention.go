package audit

import (
	"context"
	"time"
)

// RetentionInterval is how often retention runs after its first run.
const RetentionInterval = time.Hour

// Retention cuts the trail's records older than its keep duration, once
// at once and then every interval, until Close.
type Retention struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Retain starts cutting records older than keep: now, then every
// interval. Each run is logged when it cuts (by Cut) or fails.
func (t *Trail) Retain(keep, interval time.Duration) *Retention {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Retention{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			if _, err := t.Cut(ctx, t.now().Add(-keep)); err != nil && ctx.Err() == nil {
				t.log.Error("audit retention failed; trying again at the next run", "keep", keep, "next_in", interval, "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return r
}

// Close stops the retention, waiting for a run in progress to end (its
// transaction is rolled back).
func (r *Retention) Close() {
	r.cancel()
	<-r.done
}
