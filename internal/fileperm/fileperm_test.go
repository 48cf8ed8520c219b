//go:build unix

package fileperm

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTighten(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		mode, perm, want os.FileMode
		changed          bool
	}{
		{0o755, 0o700, 0o700, true},
		{0o644, 0o600, 0o600, true},
		{0o600, 0o600, 0o600, false},
		{0o400, 0o600, 0o400, false}, // never adds bits
		{0o777, 0o600, 0o600, true},
	} {
		p := filepath.Join(dir, "f")
		os.WriteFile(p, nil, 0o600)
		os.Chmod(p, tt.mode)
		was, changed, err := Tighten(p, tt.perm)
		fi, _ := os.Stat(p)
		if err != nil || changed != tt.changed || was != tt.mode || fi.Mode().Perm() != tt.want {
			t.Errorf("%o to %o: was %o changed %v err %v, now %o; want %o", tt.mode, tt.perm, was, changed, err, fi.Mode().Perm(), tt.want)
		}
		os.Remove(p)
	}
	if _, changed, err := Tighten(filepath.Join(dir, "missing"), 0o600); err != nil || changed {
		t.Errorf("missing file: %v %v", changed, err)
	}
	p := filepath.Join(dir, "g")
	os.WriteFile(p, nil, 0o600)
	for mode, want := range map[os.FileMode][2]bool{0o600: {false, false}, 0o620: {true, false}, 0o602: {true, false}, 0o640: {false, true}, 0o604: {false, true}} {
		os.Chmod(p, mode)
		fi, _ := os.Stat(p)
		if WritableByOthers(fi) != want[0] || ReadableByOthers(fi) != want[1] {
			t.Errorf("%o: writable %v readable %v, want %v", mode, WritableByOthers(fi), ReadableByOthers(fi), want)
		}
	}
}
