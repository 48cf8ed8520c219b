//go:build windows

package binary

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	// Its deletion fallback for Wine, in test binaries built -tags winetest.
	_ "github.com/myriarch/myriarch/internal/testkit"
)

// current is a directory junction on Windows, or a copy of the version
// where no junction can be made: a switch makes it the new version without
// touching the old one's files, and a crash between its two renames
// (current moved aside, the new one not yet in place) is recovered by the
// next read. Wine 8 makes no junction: the Wine tier runs the copy.
func TestCurrentSwitch(t *testing.T) {
	t.Run("junction", func(t *testing.T) { testCurrentSwitch(t, true) })
	t.Run("copy", func(t *testing.T) {
		was := makeJunction
		makeJunction = func(string, string) error { return errors.New("no junction on this volume") }
		defer func() { makeJunction = was }()
		testCurrentSwitch(t, false)
	})
}

func testCurrentSwitch(t *testing.T, junction bool) {
	root := t.TempDir()
	for _, d := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(root, "versions", d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "versions", d, "otelcol-contrib.exe"), []byte("version "+d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cleaned := false
	runs := func(want string) {
		t.Helper()
		got, err := readCurrent(root)
		if err != nil || got != want {
			t.Fatalf("current is %q (%v), want %q", got, err, want)
		}
		if _, err := os.Readlink(filepath.Join(root, "current")); (err == nil) != junction {
			t.Fatalf("current is a junction: %v, want %v", err == nil, junction)
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
		t.Fatal("the new current was not staged before the switch")
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

	// A crash after staging: recovery removes what was staged, never the
	// version it is (a junction alone, a copy whole).
	if err := switchCurrent(root, "b", func() { cleanupCurrentTemp(root); cleaned = true }); err == nil {
		t.Fatal("a switch whose staged current went went through")
	}
	if _, err := os.Lstat(filepath.Join(root, ".current.tmp")); err == nil || !cleaned {
		t.Fatal("the staged current was not removed")
	}
	runs("a")
	if b, err := os.ReadFile(filepath.Join(root, "versions", "b", "otelcol-contrib.exe")); err != nil || string(b) != "version b" {
		t.Fatalf("the staged version's files after the cleanup: %q %v", b, err)
	}
}
