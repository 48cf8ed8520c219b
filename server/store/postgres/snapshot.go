package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/myriarch/myriarch/server/store"
)

var _ store.Snapshotter = (*DB)(nil)

// schemaTable records the schema version; it is written by migrations, not
// copied.
const schemaTable = "myriarch_schema"

// Snapshot copies every myriarch table (COPY … TO STDOUT) in one
// repeatable-read, read-only transaction: one consistent moment while the
// instances go on writing. Tables are written, and restored, in the order
// they were created. pg_dump of these tables is the alternative.
func (d *DB) Snapshot(ctx context.Context, dir string) (store.SnapshotInfo, error) {
	info := store.SnapshotInfo{Backend: "postgres"}
	err := pgx.BeginTxFunc(ctx, d.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT version FROM `+schemaTable).Scan(&info.SchemaVersion); err != nil {
			return err
		}
		tables, err := myriarchTables(ctx, tx)
		if err != nil {
			return err
		}
		for _, t := range tables {
			name := t + ".copy"
			f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			_, err = tx.Conn().PgConn().CopyTo(ctx, f, `COPY `+pgx.Identifier{t}.Sanitize()+` TO STDOUT (FORMAT binary)`)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("table %s: %w", t, err)
			}
			info.Files = append(info.Files, name)
		}
		return nil
	})
	if err != nil {
		return store.SnapshotInfo{}, fmt.Errorf("postgres snapshot: %w", err)
	}
	return info, nil
}

// myriarchTables lists the tables of the current schema but the schema
// version's, oldest first.
func myriarchTables(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname <> $1 ORDER BY c.oid`, schemaTable)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Restore loads a snapshot into the database at dsn, which must hold no
// myriarch data: the schema of the snapshot's version, its tables, then
// the migrations since (as Open makes them).
func Restore(ctx context.Context, dsn, snapshotDir string, info store.SnapshotInfo) error {
	if info.Backend != "postgres" {
		return fmt.Errorf("restore into PostgreSQL: the archive holds a %s store; restore it with --data-dir", info.Backend)
	}
	if info.SchemaVersion > SchemaVersion() {
		return &store.SchemaTooNewError{Found: info.SchemaVersion, Known: SchemaVersion()}
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return fmt.Errorf("restore into %s: %w", Redact(dsn), err)
	}
	defer pool.Close()
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockMigrate); err != nil {
			return err
		}
		existing, err := myriarchTables(ctx, tx)
		if err != nil {
			return err
		}
		for _, t := range existing {
			var any bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+pgx.Identifier{t}.Sanitize()+`)`).Scan(&any); err != nil {
				return err
			}
			if any {
				return fmt.Errorf("%w (table %s has rows)", store.ErrNotEmpty, t)
			}
		}
		if len(existing) > 0 {
			return fmt.Errorf("%w (it has myriarch's tables: restore into a new database)", store.ErrNotEmpty)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+schemaTable+` (version INT NOT NULL)`); err != nil {
			return err
		}
		for i := range info.SchemaVersion {
			if _, err := tx.Exec(ctx, migrations[i]); err != nil {
				return fmt.Errorf("migration %d: %w", i+1, err)
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM `+schemaTable+`; INSERT INTO `+schemaTable+`(version) VALUES (`+fmt.Sprint(info.SchemaVersion)+`)`); err != nil {
			return err
		}
		for _, name := range info.Files {
			t, ok := strings.CutSuffix(name, ".copy")
			if !ok || strings.ContainsAny(t, "/\\") {
				return fmt.Errorf("archive file %q is not a table copy", name)
			}
			f, err := os.Open(filepath.Join(snapshotDir, name))
			if err != nil {
				return err
			}
			_, err = tx.Conn().PgConn().CopyFrom(ctx, f, `COPY `+pgx.Identifier{t}.Sanitize()+` FROM STDIN (FORMAT binary)`)
			f.Close()
			if err != nil {
				return fmt.Errorf("table %s: %w", t, err)
			}
		}
		return resetSequences(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("restore into %s: %w", Redact(dsn), err)
	}
	db, err := Open(ctx, dsn) // the migrations since the snapshot's version
	if err != nil {
		return fmt.Errorf("restore into %s: %w", Redact(dsn), err)
	}
	return db.Close()
}

// resetSequences moves every serial column's sequence past the rows copied.
func resetSequences(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND column_default LIKE 'nextval(%'`)
	if err != nil {
		return err
	}
	type col struct{ Table, Column string }
	cols, err := pgx.CollectRows(rows, pgx.RowToStructByPos[col])
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range cols {
		t, cn := pgx.Identifier{c.Table}.Sanitize(), pgx.Identifier{c.Column}.Sanitize()
		_, err := tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence($1, $2), COALESCE((SELECT max(`+cn+`) FROM `+t+`), 0) + 1, false)`, c.Table, c.Column)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
