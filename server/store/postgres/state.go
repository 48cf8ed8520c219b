package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/myriarch/myriarch/server/store"
)

// PutState implements store.State (fenced: see Campaign).
func (d *DB) PutState(ctx context.Context, key string, value []byte) error {
	if d.campaigned.Load() {
		return d.fenced(ctx, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO state(key, value) VALUES($1,$2) ON CONFLICT(key) DO UPDATE SET value=excluded.value`, key, nonNil(value))
			return err
		})
	}
	_, err := d.pool.Exec(ctx, `INSERT INTO state(key, value) VALUES($1,$2) ON CONFLICT(key) DO UPDATE SET value=excluded.value`, key, nonNil(value))
	return err
}

func (d *DB) GetState(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := d.pool.QueryRow(ctx, `SELECT value FROM state WHERE key = $1`, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("state %q: %w", key, store.ErrNotFound)
	}
	return v, err
}

// DeleteState implements store.State (fenced: see Campaign).
func (d *DB) DeleteState(ctx context.Context, key string) error {
	return d.fenced(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM state WHERE key = $1`, key)
		return err
	})
}

func (d *DB) ListState(ctx context.Context, prefix string) (map[string][]byte, error) {
	rows, err := d.pool.Query(ctx, `SELECT key, value FROM state WHERE starts_with(key, $1)`, prefix)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanMap(rows, store.TextKey)
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
