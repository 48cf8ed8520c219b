package identity

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestLoadOrCreatePersistsUUIDv7(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	id, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if id.Version() != 7 {
		t.Errorf("version = %d, want 7", id.Version())
	}
	again, err := LoadOrCreate(dir)
	if err != nil || again != id {
		t.Fatalf("second LoadOrCreate = %v, %v; want %v", again, err, id)
	}
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("state dir has leftover files: %v", entries)
	}
}

func TestCorruptFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("not-a-uuid"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreate(dir); err == nil {
		t.Fatal("corrupt identity accepted")
	}
	b, _ := os.ReadFile(filepath.Join(dir, FileName))
	if string(b) != "not-a-uuid" {
		t.Error("corrupt identity was overwritten")
	}
}
