package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/postgres"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

// StoreSQLite is the default --store: one SQLite file in --data-dir.
const StoreSQLite = "sqlite"

// Waits between attempts to reach PostgreSQL at start: doubling from the
// first to the last.
const (
	storeRetryFirst = 500 * time.Millisecond
	storeRetryMax   = 30 * time.Second
)

// storeProblem checks --store: sqlite (or empty) or a PostgreSQL URL.
func (o *Options) storeProblem() error {
	if o.Store == "" || o.Store == StoreSQLite || postgres.IsDSN(o.Store) {
		return nil
	}
	return fmt.Errorf("--store %s: must be sqlite or a postgres:// URL", postgres.Redact(o.Store))
}

// storeName is --store for logs and messages (without a password).
func (o *Options) storeName() string {
	if o.Store == "" || o.Store == StoreSQLite {
		return StoreSQLite
	}
	return postgres.Redact(o.Store)
}

// openStore opens what --store names. SQLite opens at once or fails. A
// PostgreSQL server that cannot be reached is tried again, with waits
// doubling up to 30 s, until it answers or ctx ends; meanwhile the admin
// listener answers /healthz, and /readyz 503 naming the store, so an
// orchestrator sees a live process that is not ready. What retrying cannot
// fix (a malformed DSN, a refused login, a missing database, a schema newer
// than this binary) fails at once.
func openStore(ctx context.Context, opts Options) (store.Store, error) {
	if !postgres.IsDSN(opts.Store) {
		return sqlite.Open(ctx, opts.DataDir)
	}
	var (
		mu      sync.Mutex
		lastErr error // guarded by mu
		waiting *http.Server
	)
	defer func() {
		if waiting != nil {
			waiting.Close()
		}
	}()
	wait := storeRetryFirst
	for attempt := 1; ; attempt++ {
		db, err := postgres.Open(ctx, opts.Store)
		if err == nil {
			if attempt > 1 {
				opts.Log.Info("store reachable", "store", opts.storeName(), "attempts", attempt)
			}
			return db, nil
		}
		if postgres.Permanent(err) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (stopped waiting: %w)", err, ctx.Err())
		}
		mu.Lock()
		lastErr = err
		mu.Unlock()
		opts.Log.Warn("store not reachable; /readyz answers 503 until it is; retrying",
			"store", opts.storeName(), "attempt", attempt, "retry_in", wait, "err", err)
		if waiting == nil {
			waiting = serveStarting(opts.AdminListen, opts.Log, func() []string {
				mu.Lock()
				defer mu.Unlock()
				return []string{"store not open: " + lastErr.Error()}
			})
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (stopped waiting: %w)", err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, storeRetryMax)
	}
}

// serveStarting answers health checks on the admin address while the
// server cannot start yet; nil when the address cannot be bound (the
// wait goes on without it).
func serveStarting(addr string, log *slog.Logger, ready func() []string) *http.Server {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Warn("admin listener unavailable while waiting for the store", "addr", addr, "err", err)
		return nil
	}
	srv := &http.Server{Handler: admin.Starting(ready), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("admin listener (waiting for the store) stopped", "err", err)
		}
	}()
	return srv
}
