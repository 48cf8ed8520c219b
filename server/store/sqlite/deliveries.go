package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

func (d *DB) PutDeliveries(ctx context.Context, ds []store.Delivery) (kept []string, err error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	for _, dl := range ds {
		res, err := tx.ExecContext(ctx, store.PutDeliverySQL(sqliteArg), store.DeliveryArgs(dl)...)
		if err != nil {
			return nil, fmt.Errorf("delivery %s: %w", dl.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			kept = append(kept, dl.ID)
		}
	}
	return kept, tx.Commit()
}

func (d *DB) DueDeliveries(ctx context.Context, q store.DueQuery) ([]store.Delivery, error) {
	query, args := store.DueDeliveriesSQL(q, sqliteArg)
	rows, err := d.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("due deliveries: %w", err)
	}
	defer rows.Close()
	return store.ScanDeliveries(rows)
}

func (d *DB) ClaimDelivery(ctx context.Context, dl store.Delivery, until time.Time) (bool, error) {
	query, args := store.ClaimDeliverySQL(dl, until, sqliteArg)
	res, err := d.db.ExecContext(ctx, query, args...)
	if err != nil {
		return false, fmt.Errorf("delivery %s: %w", dl.ID, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (d *DB) SettleDelivery(ctx context.Context, id string, s store.Settlement) error {
	query, args := store.SettleDeliverySQL(id, s, sqliteArg)
	res, err := d.db.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("delivery %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var one int
	err = d.db.QueryRowContext(ctx, `SELECT 1 FROM deliveries WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("delivery %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delivery %s: %w", id, err)
	}
	return fmt.Errorf("delivery %s is settled already, or attempted again since: %w", id, store.ErrConflict)
}

func (d *DB) ListDeliveries(ctx context.Context, q store.DeliveryQuery) ([]store.Delivery, error) {
	query, args := store.DeliveryListSQL(q, sqliteArg)
	rows, err := d.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	defer rows.Close()
	return store.ScanDeliveries(rows)
}

func (d *DB) PendingDeliveries(ctx context.Context) (int, error) {
	var n int
	if err := d.db.QueryRowContext(ctx, store.PendingDeliveriesSQL).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pending deliveries: %w", err)
	}
	return n, nil
}
