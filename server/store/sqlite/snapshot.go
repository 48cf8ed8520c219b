package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/myriarch/myriarch/server/store"
)

// snapshotFile is the database file in a snapshot.
const snapshotFile = "myriarch.db"

var _ store.Snapshotter = (*DB)(nil)

// Snapshot writes a copy of the database into dir: VACUUM INTO, on a
// read-only connection of its own, which reads one consistent moment (a
// WAL reader) while the store's connection goes on writing.
func (d *DB) Snapshot(ctx context.Context, dir string) (store.SnapshotInfo, error) {
	ro, err := sql.Open("sqlite", d.dsn+"&mode=ro")
	if err != nil {
		return store.SnapshotInfo{}, fmt.Errorf("sqlite snapshot: %w", err)
	}
	defer ro.Close()
	ro.SetMaxOpenConns(1)
	path := filepath.Join(dir, snapshotFile)
	if _, err := ro.ExecContext(ctx, `VACUUM INTO ?`, path); err != nil {
		return store.SnapshotInfo{}, fmt.Errorf("sqlite snapshot: %w", err)
	}
	// The version the copy holds, read from the copy.
	cp, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return store.SnapshotInfo{}, fmt.Errorf("sqlite snapshot: %w", err)
	}
	defer cp.Close()
	var version int
	if err := cp.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return store.SnapshotInfo{}, fmt.Errorf("sqlite snapshot: %w", err)
	}
	return store.SnapshotInfo{Backend: "sqlite", SchemaVersion: version, Files: []string{snapshotFile}}, nil
}

// Restore puts a snapshot's database into dataDir, which must hold none,
// and migrates it to this binary's schema.
func Restore(ctx context.Context, dataDir, snapshotDir string, info store.SnapshotInfo) error {
	if info.Backend != "sqlite" || len(info.Files) != 1 || info.Files[0] != snapshotFile {
		return fmt.Errorf("restore into SQLite: the archive holds a %s store (%v); restore it with --store", info.Backend, info.Files)
	}
	if info.SchemaVersion > SchemaVersion() {
		return &store.SchemaTooNewError{Found: info.SchemaVersion, Known: SchemaVersion()}
	}
	dst := filepath.Join(dataDir, snapshotFile)
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("restore into %s: %w (it holds %s)", dataDir, store.ErrNotEmpty, snapshotFile)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	if err := copyFile(filepath.Join(snapshotDir, snapshotFile), dst); err != nil {
		return fmt.Errorf("restore into %s: %w", dataDir, err)
	}
	db, err := Open(ctx, dataDir) // migrates an older schema
	if err != nil {
		os.Remove(dst)
		return fmt.Errorf("restore into %s: %w", dataDir, err)
	}
	return db.Close()
}

// copyFile writes src to dst (new, 0600) through a temporary file, synced.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".restoring"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(tmp)
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		os.Remove(tmp)
		return err
	}
	if err := out.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dst)
}
