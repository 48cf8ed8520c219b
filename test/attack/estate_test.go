//go:build linux

package attack

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeEstate writes files (relative path → content) under dir.
func writeEstate(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func catalogEntry(file string, content []byte) string {
	sum := sha256.Sum256(content)
	return fmt.Sprintf("name: otelcol-contrib\nversion: 0.1.0\nartifacts:\n  - {os: linux, arch: amd64, file: %s, sha256: %s, executable: otelcol-contrib}\n",
		file, hex.EncodeToString(sum[:]))
}

type estateStatus struct {
	Revision *string `json:"revision"`
	Errors   []struct {
		File, Message string
	} `json:"errors"`
}

func (d *daemon) estateStatus() estateStatus {
	d.t.Helper()
	_, body := d.api("GET", "/api/v1/estate", nil)
	var s estateStatus
	json.Unmarshal(body, &s)
	return s
}

// reloadWithin reloads the estate through the API, failing the test when
// the answer takes longer than within.
func (d *daemon) reloadWithin(within time.Duration) (int, string) {
	d.t.Helper()
	start := time.Now()
	code, body := d.api("POST", "/api/v1/estate/reload", nil)
	if el := time.Since(start); el > within {
		d.t.Errorf("estate reload took %s", el.Round(time.Millisecond))
	}
	return code, string(body)
}

// TestEstateInput (findings 7 and 8, and held): hostile estate content is
// refused quickly with the previous estate kept; links out of the estate
// are neither read, hashed nor served.
func TestEstateInput(t *testing.T) {
	t.Parallel()
	secretFile := filepath.Join(t.TempDir(), "secret")
	secret := []byte("root:$6$not-for-agents\n")
	os.WriteFile(secretFile, secret, 0o644)
	ss := sha256.Sum256(secret)
	secretSum := hex.EncodeToString(ss[:])

	art := []byte("collector archive")
	est := filepath.Join(t.TempDir(), "estate")
	writeEstate(t, est, map[string]string{
		"artifacts/a.tar.gz":                  string(art),
		"packages/otelcol-contrib/0.1.0.yaml": catalogEntry("artifacts/a.tar.gz", art),
	})
	d := &daemon{t: t, dataDir: filepath.Join(t.TempDir(), "data"), estate: est, opamp: freeAddr(t), admin: freeAddr(t),
		logPath: filepath.Join(t.TempDir(), "myriarchd.log"), http: &http.Client{Timeout: 2 * time.Minute}}
	d.start()
	t.Cleanup(d.stop)
	_, agentTok := d.token("site")
	good := *d.estateStatus().Revision

	get := func(rawPath string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+d.opamp+"/", nil)
		req.URL.Opaque = rawPath // sent as written, not cleaned by the client
		req.Header.Set("Authorization", "Bearer "+agentTok)
		resp, err := d.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/artifacts/artifacts/a.tar.gz"); code != 200 {
		t.Fatalf("catalog artifact: %d", code)
	}
	for _, p := range []string{"/artifacts/../../../etc/passwd", "/artifacts/%2e%2e/%2e%2e/etc/passwd", "/artifacts/packages/otelcol-contrib/0.1.0.yaml"} {
		if code := get(p); code == 200 {
			t.Errorf("GET %s served", p)
		}
	}
	// A catalog file swapped for a link out of the estate is not served.
	os.Remove(filepath.Join(est, "artifacts/a.tar.gz"))
	os.Symlink(secretFile, filepath.Join(est, "artifacts/a.tar.gz"))
	if code := get("/artifacts/artifacts/a.tar.gz"); code != http.StatusNotFound {
		t.Errorf("artifact linked out of the estate: %d, want 404", code)
	}

	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"catalog file linked out of the estate",
			map[string]string{"packages/otelcol-contrib/0.1.0.yaml": catalogEntry("artifacts/a.tar.gz", secret)},
			"resolves outside the estate"},
		{"one mapping of 250 000 keys", map[string]string{"inventory/x.yaml": hugeMapping(250_000)}, "at most 10000 are allowed in one mapping"},
		{"a file of 5 MiB", map[string]string{"inventory/x.yaml": "# " + strings.Repeat("x", 5<<20)}, "larger than 4 MiB"},
		{"billion laughs", map[string]string{"fleets/lol.yaml": billionLaughs}, "lol.yaml"},
	} {
		writeEstate(t, est, tc.files)
		code, body := d.reloadWithin(time.Minute)
		st := d.estateStatus()
		msg := fmt.Sprint(st.Errors)
		if code == 200 || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: reload %d %s; estate errors %s, want %q", tc.name, code, body, msg, tc.want)
		}
		if st.Revision == nil || *st.Revision != good {
			t.Errorf("%s: the previous estate is no longer in force", tc.name)
		}
		if strings.Contains(body+msg, secretSum) {
			t.Errorf("%s: the reload error reveals the SHA-256 of a file outside the estate", tc.name)
		}
		for rel := range tc.files {
			os.Remove(filepath.Join(est, rel))
		}
	}
	if code, _ := d.api("GET", "/readyz", nil); code != 200 {
		t.Errorf("server not ready after hostile estates: %d", code)
	}
}

func hugeMapping(n int) string {
	var b strings.Builder
	b.WriteString("- token: site\n  labels:\n")
	for i := range n {
		fmt.Fprintf(&b, "    k%06d: v\n", i)
	}
	return b.String()
}

const billionLaughs = `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
name: [*i]
`

// TestShutdownDuringReload (finding 7): a reload that never ends (here a
// FIFO in the Blueprint tree) does not keep SIGTERM from stopping the
// server within its grace period.
func TestShutdownDuringReload(t *testing.T) {
	t.Parallel()
	est := filepath.Join(t.TempDir(), "estate")
	os.MkdirAll(est, 0o755)
	d := &daemon{t: t, dataDir: filepath.Join(t.TempDir(), "data"), estate: est, opamp: freeAddr(t), admin: freeAddr(t),
		logPath: filepath.Join(t.TempDir(), "myriarchd.log"), http: &http.Client{Timeout: time.Minute}}
	d.start()
	t.Cleanup(func() {
		if d.cmd != nil {
			d.kill()
		}
	})
	os.MkdirAll(filepath.Join(est, "teams/t/blueprints"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(est, "teams/t/blueprints/gw.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.cmd.Process.Signal(syscall.SIGHUP)
	time.Sleep(500 * time.Millisecond) // the reload is under way
	start := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		d.cmd = nil
		figure(t, "SIGTERM during an estate reload that never ends: stopped after %s", time.Since(start).Round(time.Millisecond))
	case <-time.After(15 * time.Second):
		t.Fatal("myriarchd still running 15 s after SIGTERM while an estate reload hangs")
	}
}
