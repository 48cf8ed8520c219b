//go:build linux

package attack

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileModes (finding 10 and held): the data directory and what it
// holds are the server's user's only; a weak admin token file is refused
// by name; a token label with a NUL is refused.
func TestFileModes(t *testing.T) {
	t.Parallel()
	d := &daemon{t: t, dataDir: filepath.Join(t.TempDir(), "data"), opamp: freeAddr(t), admin: freeAddr(t),
		logPath: filepath.Join(t.TempDir(), "myriarchd.log"), http: http.DefaultClient}
	os.MkdirAll(d.dataDir, 0o755) // an existing directory open to others
	d.start()
	t.Cleanup(d.stop)
	d.token("site") // something in the database
	for _, p := range []string{d.dataDir, filepath.Join(d.dataDir, "admin.token"), filepath.Join(d.dataDir, "myriarch.db"),
		filepath.Join(d.dataDir, "myriarch.db-wal")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %04o", filepath.Base(p), fi.Mode().Perm())
		}
	}
	if code, body := d.api("POST", "/api/v1/tokens", map[string]any{"name": "n", "labels": map[string]string{"a\x00b": "x"}}); code != http.StatusBadRequest {
		t.Errorf("token label key with NUL: %d %s, want 400", code, body)
	}

	for _, tc := range []struct {
		name, token string
		mode        os.FileMode
		want        string
	}{
		{"world-writable", strings.Repeat("k", 40), 0o666, "other users could replace the admin token"},
		{"11 characters", "short-token", 0o600, "has 11 characters, at least 32"},
	} {
		f := filepath.Join(t.TempDir(), "admin.token")
		os.WriteFile(f, []byte(tc.token+"\n"), 0o600)
		os.Chmod(f, tc.mode)
		out, err := exec.Command(bins.myriarchd, "serve", "--data-dir", filepath.Join(t.TempDir(), "d"), "--listen", freeAddr(t),
			"--admin-listen", freeAddr(t), "--admin-token-file", f).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("--admin-token-file %s: %v\n%s\nwant a refusal naming %q", tc.name, err, out, tc.want)
		}
	}
}
