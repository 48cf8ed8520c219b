//go:build !windows

package selfupdate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// On Unix the backup is the old binary's own inode (what the running
// process executes), and a swap leaves no temporary file behind.
func TestApplyKeepsTheOldInodeAsBackup(t *testing.T) {
	u, exe, newBin := setup(t)
	before, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Apply(newBin, "", "1.0.0", "1.1.0", "ab", "cd"); err != nil {
		t.Fatal(err)
	}
	backup, err := os.Stat(u.backupPath())
	if err != nil || !os.SameFile(before, backup) {
		t.Fatalf("backup %v %v: want the old executable's inode", backup, err)
	}
	if now, _ := os.Stat(exe); os.SameFile(before, now) {
		t.Fatal("the executable is still the old inode")
	}
	if _, err := u.Restore(); err != nil {
		t.Fatal(err)
	}
	var names []string
	entries, _ := os.ReadDir(filepath.Dir(exe))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{".myriarch-updater.myriarch-old", "myriarch-updater", "new", "state"}
	if !slices.Equal(names, want) {
		t.Fatalf("directory holds %q, want %q", names, want)
	}
}

// An Apply that cannot make the backup changes nothing and leaves nothing
// pending.
func TestApplyWithoutABackupChangesNothing(t *testing.T) {
	u, exe, newBin := setup(t)
	// A directory where the backup goes: neither a link nor a copy can be made.
	if err := os.MkdirAll(filepath.Join(u.backupPath(), "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := u.Apply(newBin, "", "1.0.0", "1.1.0", "ab", "cd"); err == nil {
		t.Fatal("Apply without a backup succeeded")
	}
	if b, _ := os.ReadFile(exe); string(b) != "old binary" {
		t.Fatalf("executable holds %q after a failed Apply", b)
	}
	if p, err := u.Pending(); err != nil || p != nil {
		t.Fatalf("pending after a failed Apply: %+v %v", p, err)
	}
}
