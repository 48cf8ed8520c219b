package sqlite

import (
	"context"
	"fmt"

	"github.com/myriarch/myriarch/server/store"
)

// LoadConfigs implements store.Configs.
func (d *DB) LoadConfigs(ctx context.Context) (map[[16]byte][]byte, map[string][]byte, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT uid, data FROM config_assignments`)
	if err != nil {
		return nil, nil, err
	}
	assignments, err := store.ScanMap(rows, store.UIDKey)
	rows.Close()
	if err != nil {
		return nil, nil, err
	}
	rows, err = d.db.QueryContext(ctx, `SELECT hash, body FROM config_bodies`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	bodies, err := store.ScanMap(rows, store.TextKey)
	return assignments, bodies, err
}

// WriteConfigs implements store.Configs.
func (d *DB) WriteConfigs(ctx context.Context, b store.ConfigBatch) (err error) {
	if len(b.Assignments) == 0 && len(b.Bodies) == 0 && len(b.DeleteBodies) == 0 {
		return nil
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if len(b.Bodies) > 0 {
		st, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO config_bodies(hash, body) VALUES(?,?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for h, body := range b.Bodies {
			if _, err := st.ExecContext(ctx, h, nonNil(body)); err != nil {
				return fmt.Errorf("config body %s: %w", h, err)
			}
		}
	}
	if len(b.Assignments) > 0 {
		st, err := tx.PrepareContext(ctx, `INSERT INTO config_assignments(uid, data) VALUES(?,?)
			ON CONFLICT(uid) DO UPDATE SET data=excluded.data`)
		if err != nil {
			return err
		}
		defer st.Close()
		for uid, data := range b.Assignments {
			if _, err := st.ExecContext(ctx, uid[:], nonNil(data)); err != nil {
				return fmt.Errorf("config assignment %x: %w", uid, err)
			}
		}
	}
	if len(b.DeleteBodies) > 0 {
		st, err := tx.PrepareContext(ctx, `DELETE FROM config_bodies WHERE hash = ?`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, h := range b.DeleteBodies {
			if _, err := st.ExecContext(ctx, h); err != nil {
				return err
			}
		}
	}
	return tx.Commit()
}
