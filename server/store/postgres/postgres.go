// Package postgres is the myriarchd store for several instances sharing one
// estate: PostgreSQL through pgx's connection pool, with the same schema
// versions as the SQLite store, migrated under an advisory lock.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/myriarch/myriarch/server/store"
)

// DB is a store.Store backed by a PostgreSQL database.
type DB struct {
	pool *pgxpool.Pool
	dsn  string // redacted, for messages
	// campaigned: this instance has campaigned for the lead, so decisions
	// are written only while leadPID, the backend of its candidacy's
	// session, holds the leader's lock (0: it does not).
	campaigned atomic.Bool
	leadPID    atomic.Uint32
}

var _ store.Shared = (*DB)(nil)

// IsDSN reports whether s names a PostgreSQL database (a postgres:// or
// postgresql:// URL).
func IsDSN(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Redact returns dsn without its password, for logs and errors.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://…"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// Open connects to the database dsn names and migrates it. It makes one
// attempt: Permanent tells whether trying again can help.
func Open(ctx context.Context, dsn string) (*DB, error) {
	name := Redact(dsn)
	if !IsDSN(dsn) {
		return nil, &permanentError{fmt.Errorf("store %s: not a postgres:// URL", name)}
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message quotes the DSN with the password masked.
		return nil, &permanentError{fmt.Errorf("store: %w", err)}
	}
	if cfg.MaxConns < 8 {
		cfg.MaxConns = 8
	}
	cfg.MaxConnIdleTime = 5 * time.Minute
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "myriarchd"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, classify(fmt.Errorf("store %s: %w", name, err))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, classify(fmt.Errorf("store %s: %w", name, err))
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, classify(fmt.Errorf("migrate %s: %w", name, err))
	}
	return &DB{pool: pool, dsn: name}, nil
}

// Close releases the connections.
func (d *DB) Close() error {
	d.pool.Close()
	return nil
}

// PoolStats implements store.Shared.
func (d *DB) PoolStats() store.PoolStats {
	st := d.pool.Stat()
	return store.PoolStats{
		Acquired: st.AcquiredConns(), Idle: st.IdleConns(), Max: st.MaxConns(),
		Acquires: st.AcquireCount(), Waited: st.EmptyAcquireCount(), Wait: st.EmptyAcquireWaitTime(),
	}
}

// String names the database (without a password).
func (d *DB) String() string { return d.dsn }

// Permanent reports whether an error of Open will not go away by trying
// again: a malformed DSN, a refused login, a missing database, a schema
// newer than this binary. An unreachable server is not permanent.
func Permanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// classify marks the errors of Open that retrying will not fix.
func classify(err error) error {
	var pg *pgconn.PgError
	var tooNew *store.SchemaTooNewError
	switch {
	case errors.As(err, &tooNew):
		return &permanentError{err}
	case errors.As(err, &pg):
		switch {
		case strings.HasPrefix(pg.Code, "28"), // invalid authorization
			pg.Code == "3D000", // database does not exist
			pg.Code == "42501": // insufficient privilege
			return &permanentError{err}
		}
	}
	return err
}

// retryable reports whether a transaction failed only because it met a
// concurrent one (deadlock, serialization) and may simply run again.
func retryable(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (pg.Code == "40P01" || pg.Code == "40001")
}

// inTx runs fn in a transaction, again when it met a concurrent writer.
func (d *DB) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	var err error
	for attempt := range 5 {
		if err = pgx.BeginFunc(ctx, d.pool, fn); err == nil || !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt+1) * 20 * time.Millisecond):
		}
	}
	return err
}

// pgArg writes the n-th placeholder of a query the store package builds.
func pgArg(n int) string { return "$" + strconv.Itoa(n) }
