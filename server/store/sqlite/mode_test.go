//go:build unix

package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// TestFilesAreTheOwnersOnly: the database and its WAL files are created
// 0600 whatever the umask, and an existing database readable by others is
// tightened.
func TestFilesAreTheOwnersOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := db.Write(ctx, store.Batch{Agents: []store.Agent{{UID: [16]byte{1}, FirstSeen: now, LastSeen: now}}}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for _, name := range []string{"myriarch.db", "myriarch.db-wal", "myriarch.db-shm"} {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s: %s has mode %o, want 0600", when, name, fi.Mode().Perm())
			}
		}
	}
	check("created")
	db.Close()
	for _, name := range []string{"myriarch.db", "myriarch.db-wal", "myriarch.db-shm"} {
		os.Chmod(filepath.Join(dir, name), 0o644)
	}
	db, err = Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	check("reopened after a chmod 0644")
}
