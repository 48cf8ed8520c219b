package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myriarch/myriarch/server/store"
)

func (d *DB) PutDeliveries(ctx context.Context, ds []store.Delivery) (kept []string, err error) {
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		kept = nil
		for _, dl := range ds {
			tag, err := tx.Exec(ctx, store.PutDeliverySQL(pgArg), store.DeliveryArgs(dl)...)
			if err != nil {
				return fmt.Errorf("delivery %s: %w", dl.ID, err)
			}
			if tag.RowsAffected() == 0 {
				kept = append(kept, dl.ID)
			}
		}
		return nil
	})
	return kept, err
}

func (d *DB) DueDeliveries(ctx context.Context, q store.DueQuery) ([]store.Delivery, error) {
	query, args := store.DueDeliveriesSQL(q, pgArg)
	rows, err := d.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("due deliveries: %w", err)
	}
	defer rows.Close()
	return store.ScanDeliveries(rows)
}

func (d *DB) ClaimDelivery(ctx context.Context, dl store.Delivery, until time.Time) (bool, error) {
	query, args := store.ClaimDeliverySQL(dl, until, pgArg)
	tag, err := d.pool.Exec(ctx, query, args...)
	if err != nil {
		return false, fmt.Errorf("delivery %s: %w", dl.ID, err)
	}
	return tag.RowsAffected() == 1, nil
}

func (d *DB) SettleDelivery(ctx context.Context, id string, s store.Settlement) error {
	query, args := store.SettleDeliverySQL(id, s, pgArg)
	tag, err := d.pool.Exec(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("delivery %s: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var one int
	err = d.pool.QueryRow(ctx, `SELECT 1 FROM deliveries WHERE id = $1`, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("delivery %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delivery %s: %w", id, err)
	}
	return fmt.Errorf("delivery %s is settled already, or attempted again since: %w", id, store.ErrConflict)
}

func (d *DB) ListDeliveries(ctx context.Context, q store.DeliveryQuery) ([]store.Delivery, error) {
	query, args := store.DeliveryListSQL(q, pgArg)
	rows, err := d.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	defer rows.Close()
	return store.ScanDeliveries(rows)
}

func (d *DB) PendingDeliveries(ctx context.Context) (int, error) {
	var n int
	if err := d.pool.QueryRow(ctx, store.PendingDeliveriesSQL).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pending deliveries: %w", err)
	}
	return n, nil
}
