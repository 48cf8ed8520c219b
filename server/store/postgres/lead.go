package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/myriarch/myriarch/server/store"
)

// Campaign implements store.Leadership: the lead is a session advisory
// lock (lockLeader) on a connection taken out of the pool. It ends with
// that connection (the process died, the database restarted), and another
// instance takes it at its next Hold.
func (d *DB) Campaign(ctx context.Context) (store.Candidacy, error) {
	c, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("campaign: %w", err)
	}
	d.campaigned.Store(true)
	return &candidacy{db: d, conn: c.Hijack()}, nil // the lock is this connection's
}

type candidacy struct {
	db   *DB
	conn *pgx.Conn
	held bool // owned by the caller of Hold
}

var _ store.Candidacy = (*candidacy)(nil)

func (c *candidacy) Hold(ctx context.Context) (bool, error) {
	var ok bool
	var err error
	if c.held {
		err = c.conn.QueryRow(ctx, `SELECT true`).Scan(&ok) // still ours while the session lives
	} else {
		err = c.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, lockLeader).Scan(&ok)
	}
	if err != nil {
		c.lose()
		return false, fmt.Errorf("holding the lead: %w", err)
	}
	c.held = ok
	if ok {
		c.db.leadPID.Store(c.conn.PgConn().PID())
	}
	return ok, nil
}

func (c *candidacy) Close() error {
	c.lose()
	return c.conn.Close(context.Background())
}

// lose stops fencing writes with this session.
func (c *candidacy) lose() {
	c.held = false
	c.db.leadPID.Store(0)
}
