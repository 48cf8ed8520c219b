//go:build windows

package binary

import (
	"os"
	"path/filepath"
	"testing"
)

// current is a directory junction on Windows: a switch makes it point at
// the new version without touching the old one's files, and a crash
// between its two renames (current moved aside, the new junction not yet
// in place) is recovered by the next read. For a real Windows: Wine 8's
// cmd cannot make a junction (its mklink /J fails and exits 0).
func TestCurrentJunctionSwitch(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(root, "versions", d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "versions", d, "otelcol-contrib.exe"), []byte("version "+d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runs := func(want string) {
		t.Helper()
		got, err := readCurrent(root)
		if err != nil || got != want {
			t.Fatalf("current is %q (%v), want %q", got, err, want)
		}
		b, err := os.ReadFile(filepath.Join(root, "current", "otelcol-contrib.exe"))
		if err != nil || string(b) != "version "+want {
			t.Fatalf("through current: %q %v, want version %s", b, err, want)
		}
	}
	if got, err := readCurrent(root); err != nil || got != "" {
		t.Fatalf("before any switch: %q %v", got, err)
	}
	if err := switchCurrent(root, "a", func() {}); err != nil {
		t.Fatal(err)
	}
	runs("a")
	staged := false
	if err := switchCurrent(root, "b", func() {
		_, err := os.Lstat(filepath.Join(root, ".current.tmp"))
		staged = err == nil
	}); err != nil {
		t.Fatal(err)
	}
	if !staged {
		t.Fatal("the new junction was not staged before the switch")
	}
	runs("b")
	if b, err := os.ReadFile(filepath.Join(root, "versions", "a", "otelcol-contrib.exe")); err != nil || string(b) != "version a" {
		t.Fatalf("the previous version's files after the switch: %q %v", b, err)
	}
	for _, leftover := range []string{".current.tmp", ".current.old"} {
		if _, err := os.Lstat(filepath.Join(root, leftover)); err == nil {
			t.Errorf("%s is left", leftover)
		}
	}

	// A crash between the renames: current moved aside, nothing in its place.
	if err := os.Rename(filepath.Join(root, "current"), filepath.Join(root, ".current.old")); err != nil {
		t.Fatal(err)
	}
	runs("b")

	// And back.
	if err := switchCurrent(root, "a", func() {}); err != nil {
		t.Fatal(err)
	}
	runs("a")
}
