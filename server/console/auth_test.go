package console_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/console"
)

func TestNothingWithoutLogin(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	for _, tc := range []struct {
		method, path string
		status       int
		location     string
	}{
		{"GET", "/", http.StatusSeeOther, "/login?next=%2F"},
		{"GET", "/agents?kind=collector", http.StatusSeeOther, "/login?next=%2Fagents%3Fkind%3Dcollector"},
		{"GET", "/agents/0190a3a5-0000-7000-8000-000000000000", http.StatusSeeOther, "/login?next="},
		{"GET", "/tokens", http.StatusSeeOther, "/login?next=%2Ftokens"},
		{"GET", "/audit?actor=alice", http.StatusSeeOther, "/login?next=%2Faudit%3Factor%3Dalice"},
		{"GET", "/no/such/page", http.StatusSeeOther, "/login?next="},
		{"GET", "/events", http.StatusUnauthorized, ""},
		{"POST", "/tokens", http.StatusUnauthorized, ""},
		{"POST", "/fleets/edge/resume", http.StatusUnauthorized, ""},
		{"POST", "/logout", http.StatusUnauthorized, ""},
	} {
		resp, body := b.do(tc.method, tc.path, url.Values{})
		if resp.StatusCode != tc.status || !strings.HasPrefix(resp.Header.Get("Location"), tc.location) {
			t.Errorf("%s %s = %d %q %.80s; want %d %s", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Location"), body, tc.status, tc.location)
		}
	}
	// The assets are public (the login page needs them); the JSON API keeps its bearer token.
	if resp, _ := b.do("GET", "/static/console.css", nil); resp.StatusCode != 200 {
		t.Errorf("stylesheet: %d", resp.StatusCode)
	}
	if resp, body := b.do("GET", "/api/v1/agents", nil); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "an admin token or API key is required") {
		t.Errorf("API without bearer token: %d %s", resp.StatusCode, body)
	}
}

func TestLogin(t *testing.T) {
	e := newEnv(t)
	t.Run("wrong token", func(t *testing.T) {
		b := e.browser()
		resp := b.login("myradm_not-the-token")
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token: %d", resp.StatusCode)
		}
		if resp, _ := b.do("GET", "/", nil); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("a refused login opened a session: %d", resp.StatusCode)
		}
	})
	t.Run("without the login form's CSRF token", func(t *testing.T) {
		b := e.browser()
		resp, body := b.do("POST", "/login", url.Values{"token": {e.srv.AdminToken()}})
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "expired or came from elsewhere") {
			t.Fatalf("login without CSRF: %d %.200s", resp.StatusCode, body)
		}
	})
	t.Run("from another site", func(t *testing.T) {
		b := e.browser()
		b.do("GET", "/login", nil)
		resp, _ := b.do("POST", "/login", url.Values{"csrf": {b.csrf}, "token": {e.srv.AdminToken()}}, "Sec-Fetch-Site", "cross-site")
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-site login: %d", resp.StatusCode)
		}
	})
	t.Run("admin token", func(t *testing.T) {
		b := e.browser()
		b.do("GET", "/login?next=/tokens", nil)
		resp, _ := b.do("POST", "/login", url.Values{"csrf": {b.csrf}, "token": {e.srv.AdminToken()}, "next": {"/tokens"}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/tokens" {
			t.Fatalf("login: %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
		var ck *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == "myriarch_console" {
				ck = c
			}
		}
		if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure || ck.Path != "/" {
			t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, not Secure over plain HTTP", ck)
		}
		if resp, body := b.do("GET", "/tokens", nil); resp.StatusCode != 200 || !strings.Contains(body, "New enrollment token") {
			t.Fatalf("tokens page after login: %d", resp.StatusCode)
		}
	})
	t.Run("next stays on the console", func(t *testing.T) {
		for _, next := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example", "javascript:alert(1)"} {
			b := e.browser()
			b.do("GET", "/login", nil)
			resp, _ := b.do("POST", "/login", url.Values{"csrf": {b.csrf}, "token": {e.srv.AdminToken()}, "next": {next}})
			if loc := resp.Header.Get("Location"); loc != "/" {
				t.Errorf("next %q redirected to %q", next, loc)
			}
		}
	})
}

// Failed logins spend their source's budget; once it is spent, a wrong
// token or a used link is answered 429 with Retry-After. The right token
// and a valid login link still log in from that source — behind a reverse
// proxy every operator shares it — and give it its whole budget back.
func TestLoginGuessesAreLimited(t *testing.T) {
	spend := func(t *testing.T, e *env) {
		t.Helper()
		b := e.browser()
		for i := range console.LoginBurst {
			if resp := b.login("myradm_guess"); resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("wrong token %d of the budget: %d, want 401", i+1, resp.StatusCode)
			}
		}
		resp := b.login("myradm_guess")
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("a wrong token beyond the budget: %d, Retry-After %q; want 429 with Retry-After",
				resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if resp, _ := b.do("GET", "/", nil); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("a session opened while refused: %d", resp.StatusCode)
		}
	}
	link := func(t *testing.T, e *env) string {
		t.Helper()
		code, body := e.api("POST", "/api/v1/console/links", nil)
		var l struct{ Path string }
		if err := json.Unmarshal(body, &l); code != http.StatusCreated || err != nil {
			t.Fatalf("create link: %d %s", code, body)
		}
		return strings.TrimPrefix(l.Path, "/login#token=")
	}
	for _, tc := range []struct {
		name   string
		secret func(t *testing.T, e *env) string
	}{
		{"the admin token", func(_ *testing.T, e *env) string { return e.srv.AdminToken() }},
		{"a login link", link},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			spend(t, e)
			b := e.browser()
			if resp := b.login(tc.secret(t, e)); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("%s from a source out of budget: %d, want a login", tc.name, resp.StatusCode)
			}
			if resp, _ := b.do("GET", "/", nil); resp.StatusCode != http.StatusOK {
				t.Fatalf("no session after the login: %d", resp.StatusCode)
			}
			// The source has its budget back: a whole burst of wrong tokens
			// is compared again before the next 429.
			spend(t, e)
		})
	}
}

func TestOneTimeLoginLink(t *testing.T) {
	e := newEnv(t)
	if code, _ := (&env{t: t, srv: e.srv, base: e.base}).apiNoAuth("POST", "/api/v1/console/links"); code != http.StatusUnauthorized {
		t.Fatalf("a login link without the admin token: %d", code)
	}
	code, body := e.api("POST", "/api/v1/console/links", nil)
	var link struct {
		Path      string    `json:"path"`
		ExpiresAt time.Time `json:"expiresAt"`
	}
	if err := json.Unmarshal(body, &link); code != http.StatusCreated || err != nil || !strings.HasPrefix(link.Path, "/login#token=") {
		t.Fatalf("create link: %d %s", code, body)
	}
	if d := time.Until(link.ExpiresAt); d < 14*time.Minute || d > 16*time.Minute {
		t.Errorf("link expires in %s, want 15 min", d)
	}
	secret := strings.TrimPrefix(link.Path, "/login#token=")
	if resp := e.browser().login(secret); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("first use of the link: %d", resp.StatusCode)
	}
	if resp := e.browser().login(secret); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("second use of the link: %d", resp.StatusCode)
	}
}

func (e *env) apiNoAuth(method, path string) (int, string) {
	req, _ := http.NewRequest(method, e.base+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, ""
}

func TestActionsNeedTheSessionsCSRFToken(t *testing.T) {
	e := newEnv(t)
	e.token("keep")
	b := e.browser()
	b.login(e.srv.AdminToken())
	good := b.csrf
	for _, tc := range []struct {
		name string
		form url.Values
		hdr  []string
	}{
		{"no token", url.Values{"name": {"x"}}, nil},
		{"wrong token", url.Values{"name": {"x"}, "csrf": {console.Mangled(good)}}, nil},
		{"another session's token", url.Values{"name": {"x"}, "csrf": {otherCSRF(t, e)}}, nil},
		{"cross-site with the right token", url.Values{"name": {"x"}, "csrf": {good}}, []string{"Sec-Fetch-Site", "cross-site"}},
	} {
		resp, body := b.do("POST", "/tokens", tc.form, tc.hdr...)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d %.200s", tc.name, resp.StatusCode, body)
		}
	}
	if code, body := e.api("GET", "/api/v1/tokens", nil); code != 200 || strings.Contains(string(body), `"name": "x"`) {
		t.Fatalf("a refused request created a token: %s", body)
	}
	resp, body := b.do("POST", "/tokens", url.Values{"name": {"made"}, "labels": {"site=007\nwave = 2"}, "csrf": {good}})
	if resp.StatusCode != http.StatusCreated || !regexp.MustCompile(`id="secret" readonly value="myr_[^"]+"`).MatchString(body) {
		t.Fatalf("create with the token: %d %.300s", resp.StatusCode, body)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the page with a token's secret may be cached: %q", resp.Header.Get("Cache-Control"))
	}
}

func otherCSRF(t *testing.T, e *env) string {
	o := e.browser()
	o.login(e.srv.AdminToken())
	return o.csrf
}

func TestPagesCarryTheSecurityHeaders(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	b.login(e.srv.AdminToken())
	for _, path := range []string{"/login", "/", "/agents", "/fleets", "/pairings", "/tokens", "/audit", "/static/console.js"} {
		resp, _ := b.do("GET", path, nil)
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", path, resp.Header)
		}
	}
}

func TestLogoutEndsTheSessionAndItsLiveStreams(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	b.login(e.srv.AdminToken())
	ended := b.c.Jar.Cookies(mustURL(t, e.base))
	req, _ := http.NewRequest("GET", e.base+"/events", nil)
	resp, err := b.c.Do(req)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %v %v", err, resp)
	}
	defer resp.Body.Close()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if r, _ := b.do("POST", "/logout", url.Values{"csrf": {b.csrf}}); r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/login?out=1" {
		t.Fatalf("logout: %d %s", r.StatusCode, r.Header.Get("Location"))
	}
	sawLogout := false
	for l := range lines {
		sawLogout = sawLogout || l == "event: logout"
	}
	if !sawLogout {
		t.Fatal("the live stream ended without saying logout")
	}
	if r, _ := b.do("GET", "/", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("the session still works after logout: %d", r.StatusCode)
	}
	// A browser that dropped the logout's answer (another navigation of its
	// own began meanwhile) still sends the ended session's cookie: each
	// page, action and the login page clear it.
	for _, path := range []string{"/fleets", "/login", "/logout"} {
		method := "GET"
		if path == "/logout" {
			method = "POST"
		}
		req, _ := http.NewRequest(method, e.base+path, nil)
		for _, ck := range ended {
			req.AddCookie(ck)
		}
		if len(ended) == 0 {
			t.Fatal("no session cookie was kept before the logout")
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		cleared := false
		for _, ck := range resp.Cookies() {
			cleared = cleared || ck.Name == "myriarch_console" && ck.MaxAge < 0
		}
		if !cleared {
			t.Errorf("%s %s with an ended session's cookie: %d, the cookie is not cleared (%v)", method, path, resp.StatusCode, resp.Header["Set-Cookie"])
		}
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
