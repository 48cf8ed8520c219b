package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/myriarch/myriarch/server/store"
)

func isUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23505"
}

func (d *DB) InsertUser(ctx context.Context, u store.User) error {
	_, err := d.pool.Exec(ctx, `INSERT INTO users(`+store.UserColumns+`) VALUES($1,$2,$3,$4,$5,$6)`,
		u.Name, u.Role, store.FleetsColumn(u.Fleets), u.Password, u.CreatedAt.UnixNano(), u.UpdatedAt.UnixNano())
	if isUniqueViolation(err) {
		return fmt.Errorf("user %q: %w", u.Name, store.ErrConflict)
	}
	return err
}

const countAdmins = `SELECT count(*) FROM users WHERE role = 'admin' AND fleets IS NULL`

// changeUser runs change on the user named name in one transaction that
// holds the accounts lock (so two instances cannot each take away one of
// the last two admins), and refuses it when it takes away the last user
// with the admin role over every fleet.
func (d *DB) changeUser(ctx context.Context, name string, change func(tx pgx.Tx) (pgconn.CommandTag, error)) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockAccounts); err != nil {
			return fmt.Errorf("accounts lock: %w", err)
		}
		var before, after int
		if err := tx.QueryRow(ctx, countAdmins).Scan(&before); err != nil {
			return err
		}
		tag, err := change(tx)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("user %q: %w", name, store.ErrNotFound)
		}
		if err := tx.QueryRow(ctx, countAdmins).Scan(&after); err != nil {
			return err
		}
		if before > 0 && after == 0 {
			return fmt.Errorf("user %q: %w", name, store.ErrLastAdmin)
		}
		return nil
	})
}

func (d *DB) UpdateUser(ctx context.Context, u store.User) error {
	return d.changeUser(ctx, u.Name, func(tx pgx.Tx) (pgconn.CommandTag, error) {
		return tx.Exec(ctx, `UPDATE users SET role = $1, fleets = $2, password = $3, updated_at = $4 WHERE name = $5`,
			u.Role, store.FleetsColumn(u.Fleets), u.Password, u.UpdatedAt.UnixNano(), u.Name)
	})
}

func (d *DB) DeleteUser(ctx context.Context, name string) error {
	return d.changeUser(ctx, name, func(tx pgx.Tx) (pgconn.CommandTag, error) {
		return tx.Exec(ctx, `DELETE FROM users WHERE name = $1`, name)
	})
}

func (d *DB) GetUser(ctx context.Context, name string) (store.User, error) {
	rows, err := d.pool.Query(ctx, `SELECT `+store.UserColumns+` FROM users WHERE name = $1`, name)
	if err != nil {
		return store.User{}, err
	}
	defer rows.Close()
	us, err := store.ScanUsers(rows)
	if err != nil {
		return store.User{}, err
	}
	if len(us) == 0 {
		return store.User{}, fmt.Errorf("user %q: %w", name, store.ErrNotFound)
	}
	return us[0], nil
}

func (d *DB) ListUsers(ctx context.Context) ([]store.User, error) {
	rows, err := d.pool.Query(ctx, `SELECT `+store.UserColumns+` FROM users ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanUsers(rows)
}

func (d *DB) InsertAPIKey(ctx context.Context, k store.APIKey) error {
	_, err := d.pool.Exec(ctx, `INSERT INTO apikeys(`+store.APIKeyColumns+`) VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9)`,
		k.ID, k.Name, k.Role, store.FleetsColumn(k.Fleets), k.Hash, k.CreatedBy, k.CreatedAt.UnixNano(),
		store.NanosOrNil(k.ExpiresAt), store.NanosOrNil(k.RevokedAt))
	if isUniqueViolation(err) {
		return fmt.Errorf("API key %s: %w", k.ID, store.ErrConflict)
	}
	return err
}

func (d *DB) RevokeAPIKey(ctx context.Context, id string, at time.Time) error {
	tag, err := d.pool.Exec(ctx, `UPDATE apikeys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2`, at.UnixNano(), id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("API key %s: %w", id, store.ErrNotFound)
	}
	return nil
}

func (d *DB) ListAPIKeys(ctx context.Context) ([]store.APIKey, error) {
	rows, err := d.pool.Query(ctx, `SELECT `+store.APIKeyColumns+` FROM apikeys ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanAPIKeys(rows)
}

func (d *DB) APIKeyByHash(ctx context.Context, hash []byte) (store.APIKey, error) {
	rows, err := d.pool.Query(ctx, `SELECT `+store.APIKeyColumns+` FROM apikeys WHERE hash = $1`, hash)
	if err != nil {
		return store.APIKey{}, err
	}
	defer rows.Close()
	ks, err := store.ScanAPIKeys(rows)
	if err != nil {
		return store.APIKey{}, err
	}
	if len(ks) == 0 {
		return store.APIKey{}, fmt.Errorf("API key: %w", store.ErrNotFound)
	}
	return ks[0], nil
}

func (d *DB) PutSession(ctx context.Context, s store.Session, max int) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO sessions(id, principal, csrf, created_at, expires_at) VALUES($1,$2,$3,$4,$5)
			ON CONFLICT (id) DO UPDATE SET principal = EXCLUDED.principal, csrf = EXCLUDED.csrf, expires_at = EXCLUDED.expires_at`,
			s.ID, s.Principal, s.CSRF, s.CreatedAt.UnixNano(), s.ExpiresAt.UnixNano()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM sessions WHERE id IN (SELECT id FROM sessions ORDER BY expires_at DESC OFFSET $1)`, max)
		return err
	})
}

func (d *DB) GetSession(ctx context.Context, id []byte) (store.Session, error) {
	s := store.Session{ID: id}
	var created, expires int64
	err := d.pool.QueryRow(ctx, `SELECT principal, csrf, created_at, expires_at FROM sessions WHERE id = $1`, id).
		Scan(&s.Principal, &s.CSRF, &created, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, fmt.Errorf("session: %w", store.ErrNotFound)
	}
	s.CreatedAt, s.ExpiresAt = time.Unix(0, created).UTC(), time.Unix(0, expires).UTC()
	return s, err
}

func (d *DB) DeleteSession(ctx context.Context, id []byte) error {
	_, err := d.pool.Exec(ctx, `DELETE FROM sessions WHERE id = $1`, id)
	return err
}

func (d *DB) PutLoginLink(ctx context.Context, id, principal []byte, expires time.Time, max int) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO login_links(id, principal, expires_at) VALUES($1,$2,$3)
			ON CONFLICT (id) DO UPDATE SET principal = EXCLUDED.principal, expires_at = EXCLUDED.expires_at`,
			id, principal, expires.UnixNano()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM login_links WHERE id IN (SELECT id FROM login_links ORDER BY expires_at DESC OFFSET $1)`, max)
		return err
	})
}

func (d *DB) UseLoginLink(ctx context.Context, id []byte, now time.Time) ([]byte, bool, error) {
	var principal []byte
	err := d.pool.QueryRow(ctx, `DELETE FROM login_links WHERE id = $1 AND expires_at > $2 RETURNING principal`, id, now.UnixNano()).Scan(&principal)
	if errors.Is(err, pgx.ErrNoRows) {
		_, err = d.pool.Exec(ctx, `DELETE FROM login_links WHERE id = $1`, id) // an expired one goes too
		return nil, false, err
	}
	return principal, err == nil, err
}

func (d *DB) DeleteExpired(ctx context.Context, now time.Time) error {
	if _, err := d.pool.Exec(ctx, `DELETE FROM sessions WHERE expires_at <= $1`, now.UnixNano()); err != nil {
		return err
	}
	_, err := d.pool.Exec(ctx, `DELETE FROM login_links WHERE expires_at <= $1`, now.UnixNano())
	return err
}
