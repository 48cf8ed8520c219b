package cluster

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// lockLeader is the advisory lock key of the leadership (beside the
// store's migration lock, see store/postgres/locks.go).
const lockLeader int64 = 0x6d79_7261_0002

// LeaderOptions tune a Leader.
type LeaderOptions struct {
	// Check is how often a follower tries to take the lead and a leader
	// checks that its connection (and so its lock) is alive (default 1 s):
	// a leader that dies is replaced within about this long once
	// PostgreSQL sees its connection end.
	Check time.Duration
	Log   *slog.Logger
}

// Leader makes one instance among those on the database the leader: the
// holder of a session advisory lock on a connection of its own. The lock
// ends with that connection (the process died, the database restarted),
// and another instance takes it at its next check.
type Leader struct {
	pool    *pgxpool.Pool
	opts    LeaderOptions
	leading atomic.Bool
	pid     atomic.Uint32 // the lock session's backend, while leading
	stop    chan struct{}
	wg      sync.WaitGroup
}

// NewLeader prepares a candidate on pool's database.
func NewLeader(pool *pgxpool.Pool, opts LeaderOptions) *Leader {
	if opts.Check <= 0 {
		opts.Check = time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Leader{pool: pool, opts: opts, stop: make(chan struct{})}
}

// Leading reports whether this instance leads now.
func (l *Leader) Leading() bool { return l.leading.Load() }

// Fence names the session that holds the lead (see postgres.DB.SetFence):
// a write fenced by it fails once that session has ended, even before
// this instance noticed.
func (l *Leader) Fence() (pid uint32, lockKey int64, ok bool) {
	pid = l.pid.Load()
	return pid, lockLeader, l.leading.Load() && pid != 0
}

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
	var conn *pgx.Conn
	set := func(v bool) {
		if v && conn != nil {
			l.pid.Store(conn.PgConn().PID())
		}
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
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	tick := time.NewTicker(l.opts.Check)
	defer tick.Stop()
	for {
		if conn == nil {
			if c, err := l.pool.Acquire(ctx); err == nil {
				conn = c.Hijack() // the lock is this connection's
			}
		}
		if conn != nil {
			cctx, ccancel := context.WithTimeout(ctx, l.opts.Check)
			var ok bool
			var err error
			if l.leading.Load() {
				// Still ours while the session lives.
				err = conn.QueryRow(cctx, `SELECT true`).Scan(&ok)
			} else {
				err = conn.QueryRow(cctx, `SELECT pg_try_advisory_lock($1)`, lockLeader).Scan(&ok)
			}
			ccancel()
			if err != nil {
				conn.Close(context.Background())
				conn = nil
				ok = false
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
