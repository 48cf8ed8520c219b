//go:build linux

package attack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/updater"
)

const testKey = "RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"

// TestUpdaterValidate (finding 12): validate refuses files others may
// change and says what else is risky or will not work.
func TestUpdaterValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		os.Chmod(p, mode)
		return p
	}
	base := "server:\n  endpoint: ws://127.0.0.1:4320/v1/opamp\n  %s\nstate_dir: " + filepath.Join(dir, "state") + "\n"
	keys := "trust:\n  minisign_public_keys: [" + testKey + "]\n"
	for _, tc := range []struct {
		name   string
		config string
		code   int
		want   string
	}{
		{"token file 0777", file("a.yaml", strings.Replace(base, "%s", "token_file: "+file("tok1", "t\n", 0o777), 1)+keys, 0o600),
			1, "other users could replace the token"},
		{"config 0666", file("b.yaml", strings.Replace(base, "%s", "token_file: "+file("tok2", "t\n", 0o600), 1)+keys, 0o666),
			1, "other users could change what the updater installs"},
		{"inline token in a 0644 config", file("c.yaml", strings.Replace(base, "%s", "token: t", 1)+keys, 0o644),
			0, "warning: server.token: the token is inline"},
		{"signatures required without a key", file("d.yaml", strings.Replace(base, "%s", "token_file: "+file("tok3", "t\n", 0o600), 1), 0o600),
			0, "every package offer will be refused"},
	} {
		out, err := exec.Command(bins.updater, "validate", "--config", tc.config).CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		if code != tc.code || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: exit %d\n%s\nwant exit %d naming %q", tc.name, code, out, tc.code, tc.want)
		}
	}
}

// TestUpdaterDownloads (finding 12 and held): downloads go where
// trust.download_hosts allows, an offer's headers do not follow a
// redirect to another origin, and TLS is verified by default.
func TestUpdaterDownloads(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var leaked []string
	mirror := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if v := r.Header.Get("X-Artifact-Key"); v != "" {
			leaked = append(leaked, v)
		}
		mu.Unlock()
		w.Write([]byte("artifact"))
	}))
	defer mirror.Close()
	origin := httptest.NewServer(http.RedirectHandler(mirror.URL+"/a.tar.gz", http.StatusFound))
	defer origin.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tok"), []byte("t\n"), 0o600)

	fetch := func(t *testing.T, endpoint, trust, url string) error {
		cfg, problems := config.Parse([]byte("server:\n  endpoint: " + endpoint + "\n  token_file: " + filepath.Join(dir, "tok") +
			"\nstate_dir: " + dir + "\n" + trust))
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		tr, err := updater.ServerTransport(cfg, 5*time.Second, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		f, err := download.New(download.Options{Transport: tr, AllowedHosts: cfg.Trust.HostPatterns(), Attempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = f.Fetch(ctx, download.Request{URL: url, Dest: filepath.Join(t.TempDir(), "a"),
			Header: http.Header{"X-Artifact-Key": {"offer-secret"}}})
		return err
	}
	ws := "ws" + strings.TrimPrefix(origin.URL, "http") + "/v1/opamp"
	if err := fetch(t, ws, "", origin.URL+"/a.tar.gz"); err != nil {
		t.Fatalf("redirected download: %v", err)
	}
	if len(leaked) > 0 {
		t.Errorf("the offer's header reached another origin after a redirect: %v", leaked)
	}
	originHost := strings.TrimPrefix(origin.URL, "http://")
	err := fetch(t, ws, "trust:\n  download_hosts: [\""+originHost+"\"]\n", origin.URL+"/a.tar.gz")
	if !errors.Is(err, download.ErrHostNotAllowed) {
		t.Errorf("redirect to a host not in trust.download_hosts: %v, want ErrHostNotAllowed", err)
	}

	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("x")) }))
	defer tlsSrv.Close()
	wss := "wss" + strings.TrimPrefix(tlsSrv.URL, "https") + "/v1/opamp"
	if err := fetch(t, wss, "", tlsSrv.URL+"/a.tar.gz"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("download from a server with an untrusted certificate: %v, want a certificate error", err)
	}
}
