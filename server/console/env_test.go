package console_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/servertest"
)

const pkg = "otelcol-contrib"

// env is a real myriarchd (SQLite in a temp dir) with an estate, serving
// its admin listener (API and console) on loopback.
type env struct {
	t      *testing.T
	srv    *server.Server
	base   string // http://127.0.0.1:port of the admin listener
	estate string
}

// newEnv starts the server with options changed by each of with.
func newEnv(t *testing.T, with ...func(*server.Options)) *env {
	t.Helper()
	e := &env{t: t, estate: t.TempDir()}
	for _, d := range []string{"inventory", "fleets", "packages/" + pkg, "artifacts"} {
		if err := os.MkdirAll(filepath.Join(e.estate, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("MYRIARCH_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	o := server.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0", Estate: e.estate, Log: log}
	for _, f := range with {
		f(&o)
	}
	srv := servertest.StartServer(t, o)
	e.srv, e.base = srv, "http://"+srv.AdminAddr().String()
	return e
}

func (e *env) write(rel, content string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.estate, rel), []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// addVersion publishes an artifact of version in the catalog.
func (e *env) addVersion(version string) {
	data := bytes.Repeat([]byte("collector "+version+"\n"), 100)
	art := fmt.Sprintf("artifacts/%s_%s_linux_amd64.tar.gz", pkg, version)
	e.write(art, string(data))
	sum := sha256.Sum256(data)
	e.write(fmt.Sprintf("packages/%s/%s.yaml", pkg, version), fmt.Sprintf("name: %s\nversion: %s\nartifacts:\n"+
		"  - {os: linux, arch: amd64, file: %s, sha256: %s, signature: \"untrusted comment: sig\", executable: otelcol-contrib}\n",
		pkg, version, art, hex.EncodeToString(sum[:])))
}

// fleet writes a fleet of collectors with site.type=edge.
func (e *env) fleet(name, target, extra string) {
	e.write("fleets/"+name+".yaml", fmt.Sprintf("name: %s\npriority: 10\nselector: {site.type: edge}\npackage: %s\ntargetVersion: %s\n%s", name, pkg, target, extra))
}

func (e *env) reload() {
	e.t.Helper()
	if code, body := e.api("POST", "/api/v1/estate/reload", nil); code != 200 {
		e.t.Fatalf("reload: %d %s", code, body)
	}
}

// api calls the admin API with the admin token, as the CLI does.
func (e *env) api(method, path string, body any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+e.srv.AdminToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (e *env) token(name string) string {
	e.t.Helper()
	code, body := e.api("POST", "/api/v1/tokens", map[string]any{"name": name, "labels": map[string]string{"wave": "1"}})
	var tok struct{ Token string }
	if err := json.Unmarshal(body, &tok); code != http.StatusCreated || err != nil {
		e.t.Fatalf("create token: %d %s", code, body)
	}
	return tok.Token
}

func (e *env) opampURL() string { return e.srv.OpAMPURL() }

// browser is an HTTP client with a cookie jar that does not follow redirects.
type browser struct {
	e    *env
	c    *http.Client
	csrf string
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{e: e, c: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) do(method, path string, form url.Values, hdr ...string) (*http.Response, string) {
	b.e.t.Helper()
	var rd io.Reader
	if form != nil {
		rd = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, b.e.base+path, rd)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if m := csrfField.FindStringSubmatch(string(body)); m != nil {
		b.csrf = m[1]
	}
	return resp, string(body)
}

// login logs in with secret through the login form.
func (b *browser) login(secret string) *http.Response {
	b.e.t.Helper()
	b.do("GET", "/login", nil)
	resp, _ := b.do("POST", "/login", url.Values{"csrf": {b.csrf}, "token": {secret}, "next": {"/"}})
	if resp.StatusCode == http.StatusSeeOther {
		b.do("GET", "/", nil) // picks the session's CSRF token
	}
	return resp
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
