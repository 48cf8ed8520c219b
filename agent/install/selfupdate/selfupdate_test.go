package selfupdate

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func setup(t *testing.T) (*Updater, string, string) {
	t.Helper()
	dir := t.TempDir()
	exe := filepath.Join(dir, "myriarch-updater")
	os.WriteFile(exe, []byte("old binary"), 0o755)
	newBin := filepath.Join(dir, "new")
	os.WriteFile(newBin, []byte("new binary"), 0o755)
	u, err := New(exe, filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	return u, exe, newBin
}

// Apply swaps the binary and records the pending update; Restore puts the
// old binary back; Finish forgets the update. Each is safe to repeat (the
// recovery of an interrupted transaction repeats them).
func TestApplyRestoreFinish(t *testing.T) {
	for _, tc := range []struct {
		name     string
		restore  bool
		wantFile string
	}{
		{"kept", false, "new binary"},
		{"restored", true, "old binary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, exe, newBin := setup(t)
			if p, err := u.Pending(); err != nil || p != nil {
				t.Fatalf("pending before Apply: %+v %v", p, err)
			}
			if err := u.Apply(newBin, "", "1.0.0", "1.1.0", "ab", "cd"); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(exe); !bytes.Equal(b, []byte("new binary")) {
				t.Fatal("not applied")
			}
			p, err := u.Pending()
			if err != nil || p == nil || p.From != "1.0.0" || p.To != "1.1.0" || p.StatusHash() != "cd" || p.Executable != exe {
				t.Fatalf("pending %+v %v", p, err)
			}
			if tc.restore {
				for range 2 {
					if saved, err := u.Restore(); err != nil || !saved {
						t.Fatalf("Restore: saved %v, %v", saved, err)
					}
				}
			}
			if b, _ := os.ReadFile(exe); string(b) != tc.wantFile {
				t.Fatalf("executable holds %q, want %q", b, tc.wantFile)
			}
			if st, err := os.Stat(exe); err != nil || !executable(st) {
				t.Fatalf("executable mode: %v %v", st, err)
			}
			for range 2 {
				if err := u.Finish(); err != nil {
					t.Fatal(err)
				}
			}
			if p, err := u.Pending(); err != nil || p != nil {
				t.Fatalf("pending after Finish: %+v %v", p, err)
			}
		})
	}
}

func TestUnreadableMarker(t *testing.T) {
	u, _, _ := setup(t)
	if err := os.WriteFile(u.markerPath(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Pending(); err == nil {
		t.Fatal("a corrupt marker read without error")
	}
	if p, err := u.Pending(); p != nil || err != nil {
		t.Fatalf("the corrupt marker stays: %+v %v", p, err)
	}
}

func TestApplyMissingFileKeepsOld(t *testing.T) {
	u, exe, _ := setup(t)
	if err := u.Apply(filepath.Join(t.TempDir(), "absent"), "", "1", "2", "ab", ""); err == nil {
		t.Fatal("want an error")
	}
	if b, _ := os.ReadFile(exe); string(b) != "old binary" {
		t.Fatal("old binary damaged")
	}
	if p, _ := u.Pending(); p != nil {
		t.Fatal("a failed Apply left a pending marker")
	}
	if saved, err := u.Restore(); saved || err != nil {
		t.Fatalf("Restore after a failed Apply: saved %v, %v", saved, err)
	}
}

// A package carrying the Sigstore verifier replaces it beside the
// executable; a rollback puts the old one back, or removes the new one
// when there was none before.
func TestApplyReplacesTheHelper(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before string // "" : no helper installed
	}{
		{"replaced", "old helper"},
		{"added", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, exe, newBin := setup(t)
			helper := u.HelperPath()
			if filepath.Dir(helper) != filepath.Dir(exe) {
				t.Fatalf("helper %s is not beside %s", helper, exe)
			}
			if tc.before != "" {
				os.WriteFile(helper, []byte(tc.before), 0o755)
			}
			newHelper := filepath.Join(t.TempDir(), "helper")
			os.WriteFile(newHelper, []byte("new helper"), 0o755)
			if err := u.Apply(newBin, newHelper, "1.0.0", "1.1.0", "ab", "cd"); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(helper); string(b) != "new helper" {
				t.Fatalf("helper holds %q", b)
			}
			if st, err := os.Stat(helper); err != nil || !executable(st) {
				t.Fatalf("helper mode: %v %v", st, err)
			}
			for range 2 {
				if _, err := u.Restore(); err != nil {
					t.Fatal(err)
				}
			}
			b, err := os.ReadFile(helper)
			switch {
			case tc.before == "" && !os.IsNotExist(err):
				t.Fatalf("the added helper stays after a rollback: %q %v", b, err)
			case tc.before != "" && string(b) != tc.before:
				t.Fatalf("helper holds %q after a rollback, want %q", b, tc.before)
			}
			if b, _ := os.ReadFile(exe); string(b) != "old binary" {
				t.Fatalf("executable holds %q", b)
			}
		})
	}
}

// When the executable cannot be replaced, the helper already replaced is
// put back and nothing is pending.
func TestApplyFailureRestoresTheHelper(t *testing.T) {
	u, exe, newBin := setup(t)
	os.WriteFile(u.HelperPath(), []byte("old helper"), 0o755)
	newHelper := filepath.Join(t.TempDir(), "helper")
	os.WriteFile(newHelper, []byte("new helper"), 0o755)
	os.Remove(exe) // the executable cannot be replaced
	if err := u.Apply(newBin, newHelper, "1", "2", "ab", ""); err == nil {
		t.Fatal("want an error")
	}
	if b, _ := os.ReadFile(u.HelperPath()); string(b) != "old helper" {
		t.Fatalf("helper holds %q", b)
	}
	if p, _ := u.Pending(); p != nil {
		t.Fatal("a failed Apply left a pending marker")
	}
}

// executable reports a file mode that lets its owner run it (on Windows,
// where modes carry no such bit, any regular file).
func executable(st os.FileInfo) bool {
	return st.Mode().IsRegular() && (runtime.GOOS == "windows" || st.Mode().Perm()&0o100 != 0)
}
