package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/myriarch/myriarch/server/store"
)

// checkFence runs in tx before a fenced write: once this instance has
// campaigned (Campaign), the write needs the session of its candidacy to
// hold the leader's lock, and fails with store.ErrNotLeader otherwise.
func (d *DB) checkFence(ctx context.Context, tx pgx.Tx) error {
	if !d.campaigned.Load() {
		return nil
	}
	pid := d.leadPID.Load()
	ok := pid != 0
	if ok {
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND pid = $1 AND classid::bigint = ($2::bigint >> 32) AND objid::bigint = ($2::bigint & 4294967295) AND objsubid = 1)`,
			int64(pid), lockLeader).Scan(&ok)
		if err != nil {
			return fmt.Errorf("checking the lead: %w", err)
		}
	}
	if !ok {
		return store.ErrNotLeader
	}
	return nil
}

// fenced runs fn in a transaction after checkFence.
func (d *DB) fenced(ctx context.Context, fn func(pgx.Tx) error) error {
	return d.inTx(ctx, func(tx pgx.Tx) error {
		if err := d.checkFence(ctx, tx); err != nil {
			return err
		}
		return fn(tx)
	})
}
