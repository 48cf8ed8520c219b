package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/tokens"
)

func (d *DB) InsertToken(ctx context.Context, t tokens.Token) error {
	labels, _ := json.Marshal(t.Labels)
	_, err := d.pool.Exec(ctx,
		`INSERT INTO tokens(id, name, labels, hash, created_at) VALUES($1,$2,$3,$4,$5)`,
		t.ID, t.Name, string(labels), t.Hash, t.CreatedAt.UnixNano())
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "23505" { // unique_violation
		return fmt.Errorf("token name %q: %w", t.Name, store.ErrConflict)
	}
	return err
}

func (d *DB) RevokeToken(ctx context.Context, id string, at time.Time) error {
	tag, err := d.pool.Exec(ctx, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2`, at.UnixNano(), id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("token %s: %w", id, store.ErrNotFound)
	}
	return nil
}

func (d *DB) ListTokens(ctx context.Context) ([]tokens.Token, error) {
	rows, err := d.pool.Query(ctx, `SELECT id, name, labels, hash, created_at, revoked_at FROM tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanTokens(rows)
}
