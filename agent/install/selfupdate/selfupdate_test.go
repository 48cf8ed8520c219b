package selfupdate

import (
	"bytes"
	"os"
	"path/filepath"
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

func TestConfirmOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		apply    bool
		running  string
		want     Outcome
		wantFile string
	}{
		{"nothing pending", false, "1.0.0", None, "old binary"},
		{"new version runs", true, "v1.1.0", Confirmed, "new binary"},
		{"old version runs", true, "1.0.0", RolledBack, "old binary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, exe, newBin := setup(t)
			if tc.apply {
				if err := u.Apply(newBin, "1.0.0", "1.1.0", "ab", "cd"); err != nil {
					t.Fatal(err)
				}
				if b, _ := os.ReadFile(exe); !bytes.Equal(b, []byte("new binary")) {
					t.Fatal("not applied")
				}
			}
			res, err := u.Confirm(tc.running)
			if err != nil || res.Outcome != tc.want {
				t.Fatalf("outcome %v err %v", res.Outcome, err)
			}
			if b, _ := os.ReadFile(exe); string(b) != tc.wantFile {
				t.Fatalf("executable holds %q, want %q", b, tc.wantFile)
			}
			if st, err := os.Stat(exe); err != nil || st.Mode().Perm()&0o100 == 0 {
				t.Fatalf("executable mode: %v %v", st, err)
			}
			// Confirm is one-shot.
			if res, _ := u.Confirm(tc.running); res.Outcome != None {
				t.Fatalf("second Confirm: %v", res.Outcome)
			}
		})
	}
}

func TestApplyMissingFileKeepsOld(t *testing.T) {
	u, exe, _ := setup(t)
	if err := u.Apply(filepath.Join(t.TempDir(), "absent"), "1", "2", "ab", ""); err == nil {
		t.Fatal("want an error")
	}
	if b, _ := os.ReadFile(exe); string(b) != "old binary" {
		t.Fatal("old binary damaged")
	}
	if res, _ := u.Confirm("1"); res.Outcome != None {
		t.Fatal("a failed Apply left a pending marker")
	}
}
