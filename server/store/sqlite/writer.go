package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
)

// immediate runs fn in a writer transaction: BEGIN IMMEDIATE takes the
// database's write lock before fn reads anything, so what fn reads stays
// the latest until it commits, even with another handle on the same file
// (a deferred transaction that read first could only fail to write once
// another handle wrote). The busy timeout bounds the wait for the lock.
func (d *DB) immediate(ctx context.Context, fn func(c *sql.Conn) error) (err error) {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return fmt.Errorf("begin a writer transaction: %w", err)
	}
	if err = fn(c); err == nil {
		if _, err = c.ExecContext(ctx, `COMMIT`); err == nil {
			return nil
		}
	}
	if _, rerr := c.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`); rerr != nil {
		// The transaction's state is unknown: the connection is closed
		// rather than handed to the next caller.
		_ = c.Raw(func(any) error { return driver.ErrBadConn })
	}
	return err
}
