package cluster

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// LeaderOptions tune a Leader.
type LeaderOptions struct {
	// Check is how often a follower tries to take the lead and a leader
	// checks that its connection (and so its lock) is alive (default 1 s):
	// a leader that dies is replaced within about this long once
	// PostgreSQL sees its connection end.
	Check time.Duration
	Log   *slog.Logger
}

// Leader makes one instance among those sharing the store the leader: the
// holder of the store's lead (store.Leadership), on a connection of its
// own. The lead ends with that connection (the process died, the database
// restarted), and another instance takes it at its next check. The store
// fences the writes of decisions with it.
type Leader struct {
	lead    store.Leadership
	opts    LeaderOptions
	leading atomic.Bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

// NewLeader prepares a candidate for the shared store's lead.
func NewLeader(lead store.Leadership, opts LeaderOptions) *Leader {
	if opts.Check <= 0 {
		opts.Check = time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Leader{lead: lead, opts: opts, stop: make(chan struct{})}
}

// Leading reports whether this instance leads now.
func (l *Leader) Leading() bool { return l.leading.Load() }

// Start campaigns until Close; changed is called (from the campaign's
// goroutine) whenever this instance becomes or stops being the leader.
func (l *Leader) Start(changed func(leading bool)) {
	l.wg.Add(1)
	go l.campaign(changed)
}

// Close gives the lead up (closing its connection) and stops campaigning.
func (l *Leader) Close() {
	select {
	case <-l.stop:
		return
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

func (l *Leader) campaign(changed func(bool)) {
	defer l.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-l.stop; cancel() }()
	var cand store.Candidacy
	set := func(v bool) {
		if l.leading.Swap(v) != v {
			switch {
			case v:
				l.opts.Log.Info("this instance leads the instances on the store")
			case ctx.Err() != nil:
				l.opts.Log.Info("this instance gives up the lead (stopping)")
			default:
				l.opts.Log.Warn("this instance no longer leads (its connection to the store was lost)")
			}
			changed(v)
		}
	}
	defer set(false)
	defer func() {
		if cand != nil {
			cand.Close()
		}
	}()
	tick := time.NewTicker(l.opts.Check)
	defer tick.Stop()
	for {
		if cand == nil {
			cand, _ = l.lead.Campaign(ctx) // tried again at the next check
		}
		if cand != nil {
			cctx, ccancel := context.WithTimeout(ctx, l.opts.Check)
			ok, err := cand.Hold(cctx)
			ccancel()
			if err != nil {
				cand.Close()
				cand = nil
			}
			set(ok)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
