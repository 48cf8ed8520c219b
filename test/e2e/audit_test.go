package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/test/e2e/site"
)

// auditRecord is a record of `myriarchd audit -o json`.
type auditRecord struct {
	ID                                                                   int64
	Actor, Role, Via, Action, Target, Source, RequestID, Outcome, Detail string
	Prev, Hash                                                           string
}

// Every way into a real myriarchd process leaves one record before its
// answer: the API (the admin token, an API key refused), the CLI, the
// console (a user's password sign-in and a fleet pause), and estate
// reloads by SIGHUP and by the API, naming the Git commit and its author.
// The CLI exports the records as JSON lines and verifies their chain.
func TestEveryChannelIsAudited(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	est := filepath.Join(root, "estate")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", est}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	commit := func(author, file, body string) string {
		t.Helper()
		if err := os.WriteFile(filepath.Join(est, file), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		git("add", "-A")
		git("-c", "user.name="+author, "-c", "user.email=x@example.com", "commit", "-q", "--author", author+" <"+strings.ToLower(strings.Fields(author)[0])+"@example.com>", "-m", "estate")
		return git("rev-parse", "HEAD")
	}
	if err := os.MkdirAll(filepath.Join(est, "fleets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := site.WriteGatewayBlueprint(est, "127.0.0.1:4318", "otlphttp", "127.0.0.1:4319"); err != nil {
		t.Fatal(err)
	}
	git("init", "-q")
	commit("Ada Lovelace", "fleets/edge.yaml", "name: edge\nselector: {site.type: edge}\n"+site.GatewayConfig)

	srv, err := site.StartServer(bins.Myriarchd, filepath.Join(root, "server"), est, filepath.Join(root, "myriarchd.log"), "", "")
	if err != nil {
		dumpLogs(t, root)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Stop()
		if t.Failed() {
			dumpLogs(t, root)
		}
	})
	base := "http://" + srv.AdminAddr

	// cli runs the command words (such as "users create") with the
	// connection's flags, then args.
	cli := func(stdin, words string, args ...string) string {
		t.Helper()
		argv := append(strings.Fields(words), "--admin", base, "--data-dir", srv.DataDir)
		cmd := exec.Command(bins.Myriarchd, append(argv, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("myriarchd %s %v: %v\n%s", words, args, err, stderr.String())
		}
		return string(out)
	}
	trail := func() []auditRecord {
		t.Helper()
		var out []auditRecord
		sc := bufio.NewScanner(strings.NewReader(cli("", "audit", "--output", "json")))
		for sc.Scan() {
			var r auditRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("audit --json line %q: %v", sc.Text(), err)
			}
			out = append(out, r)
		}
		return out
	}
	newest := func() auditRecord {
		t.Helper()
		rs := trail()
		if len(rs) == 0 {
			t.Fatal("the trail is empty")
		}
		return rs[0]
	}

	// The API, with the admin token: answered only once recorded.
	var tok struct{ ID string }
	if code, err := srv.API("POST", "/api/v1/tokens", map[string]any{"name": "rack-1"}, &tok); code != 201 || err != nil {
		t.Fatalf("token create: %d %v", code, err)
	}
	if r := newest(); r.Via != "api" || r.Actor != "admin-token" || r.Role != "admin" || r.Action != "token.create" || r.Outcome != "ok" ||
		!strings.Contains(r.Target, tok.ID) || r.RequestID == "" || r.Source == "" {
		t.Fatalf("token create record: %+v", r)
	}

	// The CLI: via cli. A viewer's API key, made by the CLI, refused.
	cli("a long enough password\n", "users create", "--name", "ada", "--role", "operator", "--password-stdin")
	if r := newest(); r.Via != "cli" || r.Action != "user.create" || r.Outcome != "ok" || !strings.Contains(r.Target, "ada") {
		t.Fatalf("users create record: %+v", r)
	}
	var key struct{ ID, Secret string }
	json.Unmarshal([]byte(cli("", "apikeys create", "--name", "dash", "--role", "viewer", "-o", "json")), &key)
	code, rid := post(t, base+"/api/v1/fleets/edge/pause", key.Secret)
	if r := newest(); code != 403 || r.Via != "api" || r.Actor != "apikey:"+key.ID || r.Role != "viewer" || r.Action != "fleet.pause" ||
		r.Outcome != "denied" || r.RequestID != rid {
		t.Fatalf("a viewer's pause (%d, request %s): %+v", code, rid, r)
	}
	code, rid = post(t, base+"/api/v1/fleets/edge/pause", "")
	if r := newest(); code != 401 || r.Actor != "" || r.Action != "fleet.pause" || r.Outcome != "denied" || r.RequestID != rid ||
		!strings.Contains(r.Detail, "not authenticated") {
		t.Fatalf("a pause without a credential (%d): %+v", code, r)
	}

	// The console: ada signs in with her password and pauses fleet edge.
	b := newConsoleBrowser(t, base)
	b.submit("/login", "/login", url.Values{"name": {"ada"}, "password": {"a long enough password"}})
	if r := newest(); r.Via != "console" || r.Actor != "ada" || r.Action != "console.login" || r.Outcome != "ok" {
		t.Fatalf("sign-in record: %+v", r)
	}
	b.submit("/fleets", "/fleets/edge/pause", nil)
	if r := newest(); r.Via != "console" || r.Actor != "ada" || r.Role != "operator" || r.Action != "fleet.pause" || r.Outcome != "ok" ||
		!strings.Contains(r.Target, "edge") {
		t.Fatalf("console pause record: %+v", r)
	}

	// Estate reloads: by SIGHUP (via estate), then by the API, each naming
	// the commit it loaded and its author.
	grace := commit("Grace Hopper", "fleets/core.yaml", "name: core\nselector: {site.type: core}\n"+site.GatewayConfig)
	if err := srv.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var reload auditRecord
	testkit.WaitWithin(t, 30*time.Second, "the SIGHUP reload's record", func() bool {
		reload = newest()
		return reload.Action == "estate.reload"
	})
	if reload.Via != "estate" || reload.Actor != "signal:SIGHUP" || reload.Outcome != "ok" ||
		!strings.Contains(reload.Detail, grace[:12]) || !strings.Contains(reload.Detail, "Grace Hopper <grace@example.com>") {
		t.Fatalf("SIGHUP reload record: %+v", reload)
	}
	linus := commit("Linus Torvalds", "fleets/lab.yaml", "name: lab\nselector: {site.type: lab}\n"+site.GatewayConfig)
	if code, err := srv.API("POST", "/api/v1/estate/reload", nil, nil); code != 200 || err != nil {
		t.Fatalf("estate reload: %d %v", code, err)
	}
	if r := newest(); r.Via != "api" || r.Actor != "admin-token" || r.Action != "estate.reload" || r.Outcome != "ok" ||
		!strings.Contains(r.Detail, linus[:12]) || !strings.Contains(r.Detail, "Linus Torvalds <linus@example.com>") {
		t.Fatalf("API reload record: %+v", r)
	}

	// The whole trail: newest first, chained, and verified.
	rs := trail()
	for i := 1; i < len(rs); i++ {
		if rs[i-1].ID != rs[i].ID+1 || rs[i-1].Prev != rs[i].Hash {
			t.Fatalf("records %d and %d are not chained: %+v / %+v", rs[i-1].ID, rs[i].ID, rs[i-1], rs[i])
		}
	}
	if out := cli("", "audit verify", "-o", "json"); !strings.Contains(out, `"ok": true`) {
		t.Fatalf("audit verify: %s", out)
	}
}

// post sends a POST with an optional bearer credential and returns its
// status and request id.
func post(t *testing.T, u, cred string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", u, nil)
	if cred != "" {
		req.Header.Set("Authorization", "Bearer "+cred)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Request-Id")
}

// consoleBrowser is an HTTP client keeping the console's cookies, which
// submits its forms with the CSRF token the page carries.
type consoleBrowser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newConsoleBrowser(t *testing.T, base string) *consoleBrowser {
	jar, _ := cookiejar.New(nil)
	return &consoleBrowser{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 10 * time.Second}}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// submit reads page for its CSRF token and posts form to action,
// failing the test unless the console answers with a page or a redirect.
func (b *consoleBrowser) submit(page, action string, form url.Values) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + page)
	if err != nil {
		b.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(body)
	if m == nil {
		b.t.Fatalf("GET %s: %d, no CSRF token:\n%s", page, resp.StatusCode, body)
	}
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", string(m[1]))
	resp, err = b.c.PostForm(b.base+action, form)
	if err != nil {
		b.t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.t.Fatalf("POST %s: %d\n%s", action, resp.StatusCode, body)
	}
}
