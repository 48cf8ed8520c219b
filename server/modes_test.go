//go:build unix

package server_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/server"
)

// TestFileModes: the data directory, the database and the admin token are
// the server's user's only; a weak --admin-token-file is refused by name.
func TestFileModes(t *testing.T) {
	t.Run("data dir and generated token", func(t *testing.T) {
		dir := t.TempDir()
		os.Chmod(dir, 0o755)
		ts := startServer(t, func(o *server.Options) { o.DataDir = dir })
		ts.stop()
		os.Chmod(filepath.Join(dir, "admin.token"), 0o644)
		os.Chmod(dir, 0o755)
		startWith(t, ts.opts)
		for _, p := range []string{dir, filepath.Join(dir, "admin.token"), filepath.Join(dir, "myriarch.db")} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s has mode %04o: open to other users", p, fi.Mode().Perm())
			}
		}
	})
	tokenFile := func(t *testing.T, tok string, mode os.FileMode) string {
		p := filepath.Join(t.TempDir(), "admin.token")
		os.WriteFile(p, []byte(tok+"\n"), 0o600)
		os.Chmod(p, mode)
		return p
	}
	good := strings.Repeat("a1", 16)
	for _, tc := range []struct {
		name string
		tok  string
		mode os.FileMode
		want string // "" loads
	}{
		{"world-writable file", good, 0o666, "other users could replace the admin token"},
		{"group-writable file", good, 0o620, "other users could replace the admin token"},
		{"11 characters", "short-token", 0o600, "has 11 characters, at least 32"},
		{"white space inside", "aaaaaaaaaaaaaaaa bbbbbbbbbbbbbbbbbbbb", 0o600, "white space"},
		{"good", good, 0o600, ""},
		{"good, readable by others (logged)", good, 0o644, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := server.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
				AdminTokenFile: tokenFile(t, tc.tok, tc.mode), Log: testLogger(t)}
			s, err := server.New(context.Background(), opts)
			if err == nil {
				s.Close(context.Background())
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (!errors.Is(err, server.ErrWeakAdminToken) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want ErrWeakAdminToken naming %q", err, tc.want)
			}
		})
	}
	t.Run("token label with NUL", func(t *testing.T) {
		ts := startServer(t)
		code, body := ts.api("POST", "/api/v1/tokens", map[string]any{"name": "n", "labels": map[string]string{"a\x00b": "x"}})
		if code != http.StatusBadRequest || !strings.Contains(string(body), "control characters") {
			t.Fatalf("label key with NUL: %d %s, want 400 naming control characters", code, body)
		}
	})
}
