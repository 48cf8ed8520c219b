package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

func isUniqueViolation(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

func (d *DB) InsertUser(ctx context.Context, u store.User) error {
	_, err := d.db.ExecContext(ctx, `INSERT INTO users(`+store.UserColumns+`) VALUES(?,?,?,?,?,?)`,
		u.Name, u.Role, store.FleetsColumn(u.Fleets), u.Password, u.CreatedAt.UnixNano(), u.UpdatedAt.UnixNano())
	if isUniqueViolation(err) {
		return fmt.Errorf("user %q: %w", u.Name, store.ErrConflict)
	}
	return err
}

const countAdmins = `SELECT count(*) FROM users WHERE role = 'admin' AND fleets IS NULL`

// changeUser runs change on the user named name in one transaction, and
// refuses it when it takes away the last user with the admin role over
// every fleet.
func (d *DB) changeUser(ctx context.Context, name string, change func(tx *sql.Tx) (sql.Result, error)) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var before, after int
	if err := tx.QueryRowContext(ctx, countAdmins).Scan(&before); err != nil {
		return err
	}
	res, err := change(tx)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("user %q: %w", name, store.ErrNotFound)
	}
	if err := tx.QueryRowContext(ctx, countAdmins).Scan(&after); err != nil {
		return err
	}
	if before > 0 && after == 0 {
		return fmt.Errorf("user %q: %w", name, store.ErrLastAdmin)
	}
	return tx.Commit()
}

func (d *DB) UpdateUser(ctx context.Context, u store.User) error {
	return d.changeUser(ctx, u.Name, func(tx *sql.Tx) (sql.Result, error) {
		return tx.ExecContext(ctx, `UPDATE users SET role = ?, fleets = ?, password = ?, updated_at = ? WHERE name = ?`,
			u.Role, store.FleetsColumn(u.Fleets), u.Password, u.UpdatedAt.UnixNano(), u.Name)
	})
}

func (d *DB) DeleteUser(ctx context.Context, name string) error {
	return d.changeUser(ctx, name, func(tx *sql.Tx) (sql.Result, error) {
		return tx.ExecContext(ctx, `DELETE FROM users WHERE name = ?`, name)
	})
}

func (d *DB) GetUser(ctx context.Context, name string) (store.User, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT `+store.UserColumns+` FROM users WHERE name = ?`, name)
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
	rows, err := d.db.QueryContext(ctx, `SELECT `+store.UserColumns+` FROM users ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanUsers(rows)
}

func (d *DB) InsertAPIKey(ctx context.Context, k store.APIKey) error {
	_, err := d.db.ExecContext(ctx, `INSERT INTO apikeys(`+store.APIKeyColumns+`) VALUES(?,?,?,?,?,?,?,?,?)`,
		k.ID, k.Name, k.Role, store.FleetsColumn(k.Fleets), k.Hash, k.CreatedBy, k.CreatedAt.UnixNano(),
		store.NanosOrNil(k.ExpiresAt), store.NanosOrNil(k.RevokedAt))
	if isUniqueViolation(err) {
		return fmt.Errorf("API key %s: %w", k.ID, store.ErrConflict)
	}
	return err
}

func (d *DB) RevokeAPIKey(ctx context.Context, id string, at time.Time) error {
	res, err := d.db.ExecContext(ctx, `UPDATE apikeys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, at.UnixNano(), id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("API key %s: %w", id, store.ErrNotFound)
	}
	return nil
}

func (d *DB) ListAPIKeys(ctx context.Context) ([]store.APIKey, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT `+store.APIKeyColumns+` FROM apikeys ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanAPIKeys(rows)
}

func (d *DB) APIKeyByHash(ctx context.Context, hash []byte) (store.APIKey, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT `+store.APIKeyColumns+` FROM apikeys WHERE hash = ?`, hash)
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
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO sessions(id, principal, csrf, created_at, expires_at) VALUES(?,?,?,?,?)`,
		s.ID, s.Principal, s.CSRF, s.CreatedAt.UnixNano(), s.ExpiresAt.UnixNano()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id IN (SELECT id FROM sessions ORDER BY expires_at DESC LIMIT -1 OFFSET ?)`, max); err != nil {
		return err
	}
	return tx.Commit()
}

func (d *DB) GetSession(ctx context.Context, id []byte) (store.Session, error) {
	s := store.Session{ID: id}
	var created, expires int64
	err := d.db.QueryRowContext(ctx, `SELECT principal, csrf, created_at, expires_at FROM sessions WHERE id = ?`, id).
		Scan(&s.Principal, &s.CSRF, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("session: %w", store.ErrNotFound)
	}
	s.CreatedAt, s.ExpiresAt = time.Unix(0, created).UTC(), time.Unix(0, expires).UTC()
	return s, err
}

func (d *DB) DeleteSession(ctx context.Context, id []byte) error {
	_, err := d.db.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
	return err
}

func (d *DB) PutLoginLink(ctx context.Context, id, principal []byte, expires time.Time, max int) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO login_links(id, principal, expires_at) VALUES(?,?,?)`, id, principal, expires.UnixNano()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM login_links WHERE id IN (SELECT id FROM login_links ORDER BY expires_at DESC LIMIT -1 OFFSET ?)`, max); err != nil {
		return err
	}
	return tx.Commit()
}

func (d *DB) UseLoginLink(ctx context.Context, id []byte, now time.Time) ([]byte, bool, error) {
	var principal []byte
	err := d.db.QueryRowContext(ctx, `DELETE FROM login_links WHERE id = ? AND expires_at > ? RETURNING principal`, id, now.UnixNano()).Scan(&principal)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = d.db.ExecContext(ctx, `DELETE FROM login_links WHERE id = ?`, id) // an expired one goes too
		return nil, false, err
	}
	return principal, err == nil, err
}

func (d *DB) DeleteExpired(ctx context.Context, now time.Time) error {
	if _, err := d.db.ExecContext(ctx, `DELETE FROM sessions WHERE expires_at <= ?`, now.UnixNano()); err != nil {
		return err
	}
	_, err := d.db.ExecContext(ctx, `DELETE FROM login_links WHERE expires_at <= ?`, now.UnixNano())
	return err
}
