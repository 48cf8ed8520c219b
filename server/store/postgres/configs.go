package postgres

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/myriarch/myriarch/server/store"
)

// LoadConfigs implements store.Configs.
func (d *DB) LoadConfigs(ctx context.Context) (map[[16]byte][]byte, map[string][]byte, error) {
	rows, err := d.pool.Query(ctx, `SELECT uid, data FROM config_assignments`)
	if err != nil {
		return nil, nil, err
	}
	assignments, err := store.ScanMap(rows, store.UIDKey)
	rows.Close()
	if err != nil {
		return nil, nil, err
	}
	rows, err = d.pool.Query(ctx, `SELECT hash, body FROM config_bodies`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	bodies, err := store.ScanMap(rows, store.TextKey)
	return assignments, bodies, err
}

// WriteConfigs implements store.Configs: bodies are added (a hash already
// stored keeps its body), assignments upserted, then bodies deleted
// (fenced: see Campaign).
func (d *DB) WriteConfigs(ctx context.Context, b store.ConfigBatch) error {
	if len(b.Assignments) == 0 && len(b.Bodies) == 0 && len(b.DeleteBodies) == 0 {
		return nil
	}
	hashes := make([]string, 0, len(b.Bodies))
	for h := range b.Bodies {
		hashes = append(hashes, h)
	}
	slices.Sort(hashes)
	uids := sortedKeys(b.Assignments)
	return d.fenced(ctx, func(tx pgx.Tx) error {
		for lo := 0; lo < len(hashes); lo += chunk {
			part := hashes[lo:min(lo+chunk, len(hashes))]
			bodies := make([][]byte, len(part))
			for i, h := range part {
				bodies[i] = nonNil(b.Bodies[h])
			}
			if _, err := tx.Exec(ctx, `INSERT INTO config_bodies(hash, body) SELECT * FROM unnest($1::text[], $2::bytea[])
				ON CONFLICT (hash) DO NOTHING`, part, bodies); err != nil {
				return err
			}
		}
		for lo := 0; lo < len(uids); lo += chunk {
			part := uids[lo:min(lo+chunk, len(uids))]
			keys, data := make([][]byte, len(part)), make([][]byte, len(part))
			for i, uid := range part {
				keys[i], data[i] = uid[:], nonNil(b.Assignments[uid])
			}
			if _, err := tx.Exec(ctx, `INSERT INTO config_assignments(uid, data) SELECT * FROM unnest($1::bytea[], $2::bytea[])
				ON CONFLICT (uid) DO UPDATE SET data = excluded.data`, keys, data); err != nil {
				return err
			}
		}
		if len(b.DeleteBodies) > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM config_bodies WHERE hash = ANY($1::text[])`, b.DeleteBodies); err != nil {
				return err
			}
		}
		return nil
	})
}
