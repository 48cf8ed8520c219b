package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/myriarch/myriarch/server/store"
)

// Fence says which session holds the lock that entitles this instance to
// write decisions: the backend PID of that session and the advisory lock
// key; ok is false while this instance does not hold it.
type Fence func() (pid uint32, lockKey int64, ok bool)

// SetFence fences the writes of decisions (offer and configuration
// records, configuration bodies, server state): each checks, in its own
// transaction, that fence's session still holds its lock, and fails with
// store.ErrNotLeader otherwise. An instance that lost the lead without
// noticing yet (its lock's connection died) so never overwrites what the
// new leader decided. Call before the writes start.
func (d *DB) SetFence(fence Fence) { d.fence.Store(&fence) }

// checkFence runs in tx before a fenced write.
func (d *DB) checkFence(ctx context.Context, tx pgx.Tx) error {
	f := d.fence.Load()
	if f == nil {
		return nil
	}
	pid, key, ok := (*f)()
	if ok {
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND pid = $1 AND classid::bigint = ($2::bigint >> 32) AND objid::bigint = ($2::bigint & 4294967295) AND objsubid = 1)`,
			int64(pid), key).Scan(&ok)
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
