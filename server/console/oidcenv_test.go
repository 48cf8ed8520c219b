package console_test

import (
	"bytes"
	"context"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/myriarch/myriarch/internal/testenv/oidcprovider"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/audit"
	"github.com/myriarch/myriarch/server/oidclogin"
)

// auditLog reads the console's logins from a test server's audit trail.
type auditLog struct{ srv *server.Server }

// logins returns the records of console logins so far, refused or not,
// oldest first.
func (l *auditLog) logins() []audit.Record {
	p, err := l.srv.Audit().List(context.Background(), audit.Query{Action: "console.login", Limit: audit.MaxLimit})
	if err != nil {
		panic(err)
	}
	slices.Reverse(p.Records)
	return p.Records
}

// last returns the last login record, failing the test without one.
func (l *auditLog) last(t *testing.T) audit.Record {
	t.Helper()
	ls := l.logins()
	if len(ls) == 0 {
		t.Fatal("no login was audited")
	}
	return ls[len(ls)-1]
}

// logBuffer keeps a server's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer // guarded by mu
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// count returns how many lines so far contain s.
func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// oidcEnv is a real myriarchd whose console signs operators in with a
// real OpenID Provider.
type oidcEnv struct {
	*env
	idp   *oidcprovider.Provider
	audit *auditLog
	logs  *logBuffer
}

const oidcSecret = "client-s3cret-of-the-console"

// oidcRoles is the console's mapping of groups to roles.
var oidcRoles = oidclogin.Roles{
	"admins":   {Role: "admin"},
	"edge-ops": {Role: "operator", Fleets: []string{"edge"}},
	"staff":    {Role: "viewer"},
}

// newOIDCEnv starts a provider and a myriarchd signing in with it, and
// waits until the console has discovered the provider.
func newOIDCEnv(t *testing.T) *oidcEnv {
	t.Helper()
	e := startOIDCEnv(t, oidcprovider.Start(t))
	e.waitForProvider()
	return e
}

// startOIDCEnv starts a myriarchd signing in with idp, without waiting.
func startOIDCEnv(t *testing.T, idp *oidcprovider.Provider) *oidcEnv {
	t.Helper()
	file := filepath.Join(t.TempDir(), "oidc-client-secret")
	if err := os.WriteFile(file, []byte(oidcSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	e := newEnv(t, func(o *server.Options) {
		o.OIDC = oidclogin.Settings{Issuer: idp.Issuer(), ClientID: "myriarch", ClientSecretFile: file, Name: "Test IdP", Roles: oidcRoles}
		o.Log = slog.New(slog.NewTextHandler(logs, nil))
	})
	idp.Register(oidcprovider.Client{ID: "myriarch", Secret: oidcSecret, RedirectURI: e.base + "/login/oidc/callback"})
	return &oidcEnv{env: e, idp: idp, audit: &auditLog{srv: e.srv}, logs: logs}
}

// waitForProvider waits until the login page offers the provider.
func (e *oidcEnv) waitForProvider() {
	e.t.Helper()
	testkit.WaitFor(e.t, "the login page to offer the provider", func() bool {
		_, body := e.browser().do("GET", "/login", nil)
		return strings.Contains(body, `<a id="oidc" class="button"`)
	})
}

// member is an account of the provider in groups, named by its verified
// email.
func member(name string, groups ...string) oidcprovider.User {
	return oidcprovider.User{Subject: "sub-" + name, Email: name + "@example.com", EmailVerified: true, Claims: map[string]any{"groups": groups}}
}

// authorize begins a sign-in with the provider in b, and goes through the
// provider's login step as a browser would, up to the provider's answer:
// the console's callback path and query it sends the browser to, and the
// attempt's cookie as it was set.
func (b *browser) authorize(e *oidcEnv, next string) (string, *http.Cookie) {
	b.e.t.Helper()
	t := b.e.t
	resp, _ := b.do("GET", "/login/oidc?next="+url.QueryEscape(next), nil)
	var attempt *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "myriarch_oidc" {
			attempt = c
		}
	}
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, e.idp.Issuer()+"/authorize?") || attempt == nil {
		t.Fatalf("begin: %d to %q, cookie %v", resp.StatusCode, loc, attempt)
	}
	follow := func(req *http.Request) string {
		t.Helper()
		resp, err := b.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		next, err := resp.Location()
		if resp.StatusCode/100 != 3 || err != nil {
			t.Fatalf("%s %s: %d", req.Method, req.URL, resp.StatusCode)
		}
		return next.String()
	}
	get := func(u string) *http.Request { r, _ := http.NewRequest("GET", u, nil); return r }
	login, _ := url.Parse(follow(get(loc)))
	form := url.Values{"id": {login.Query().Get("id")}}
	post, _ := http.NewRequest("POST", e.idp.Issuer()+"/login", strings.NewReader(form.Encode()))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	back := follow(get(follow(post)))
	path, ok := strings.CutPrefix(back, b.e.base)
	if !ok || !strings.HasPrefix(path, "/login/oidc/callback?") {
		t.Fatalf("the provider answered at %s", back)
	}
	return path, attempt
}

var refresh = regexp.MustCompile(`<meta http-equiv="refresh" content="0; url=([^"]*)">`)

// signedIn reports where the page a sign-in ends on goes on to, and
// whether the answer is that page with a session cookie.
func signedIn(resp *http.Response, body string) (string, bool) {
	m := refresh.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil || sessionCookie(resp) == nil {
		return "", false
	}
	return html.UnescapeString(m[1]), true
}

// sessionCookie returns the console session cookie a response set.
func sessionCookie(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == "myriarch_console" && c.MaxAge >= 0 && c.Value != "" {
			return c
		}
	}
	return nil
}
