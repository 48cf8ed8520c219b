package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/internal/testenv/oidcprovider"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/console"
	"github.com/myriarch/myriarch/server/oidclogin"
)

// A sign-in with the provider opens a session acting with the mapped role
// and goes on to the page asked for; it is audited, and the attempt's
// cookie, SameSite=Lax and only for the sign-in's routes, is ended.
func TestOIDCSignIn(t *testing.T) {
	e := newOIDCEnv(t)
	e.idp.SetUser(member("ada", "staff", "edge-ops"))
	b := e.browser()
	path, attempt := b.authorize(e, "/fleets?x=1")
	if !attempt.HttpOnly || attempt.SameSite != http.SameSiteLaxMode || attempt.Path != "/login/oidc" || attempt.MaxAge <= 0 || attempt.MaxAge > 600 {
		t.Errorf("attempt cookie %+v: want HttpOnly, SameSite=Lax, path /login/oidc, at most 10 minutes", attempt)
	}
	resp, body := b.do("GET", path, nil)
	if next, ok := signedIn(resp, body); !ok || next != "/fleets?x=1" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("callback: %d going on to %q (%v):\n%s", resp.StatusCode, next, ok, body)
	}
	cleared := false
	for _, c := range resp.Cookies() {
		cleared = cleared || (c.Name == "myriarch_oidc" && c.MaxAge < 0)
	}
	if !cleared {
		t.Error("the attempt's cookie stays after the sign-in")
	}
	if resp, body := b.do("GET", "/fleets", nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, "<h1>Fleets</h1>") {
		t.Fatalf("fleets after the sign-in: %d", resp.StatusCode)
	}
	if got := e.audit.last(t); got.Outcome != admin.OutcomeOK || got.Actor != "oidc:ada@example.com" || got.Role != "operator" ||
		got.Detail != "signed in with OpenID Connect (Test IdP)" {
		t.Fatalf("audited %+v", got)
	}
	// The session acts with the mapped role: operator of edge only.
	if resp, _ := b.do("POST", "/tokens", url.Values{"csrf": {b.csrf}, "name": {"x"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("an operator created a token: %d", resp.StatusCode)
	}
}

// next is kept through the sign-in, on the console only.
func TestOIDCSignInKeepsNextOnTheConsole(t *testing.T) {
	e := newOIDCEnv(t)
	e.idp.SetUser(member("ada", "staff"))
	long := "/agents?q=" + strings.Repeat("x", 4000) // past what a cookie carries
	for _, next := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example", long} {
		b := e.browser()
		path, _ := b.authorize(e, next)
		if to, ok := signedIn(b.do("GET", path, nil)); !ok || to != "/" {
			t.Errorf("next %q: going on to %q (%v)", next, to, ok)
		}
	}
	// An attempt's cookie changed to go elsewhere goes nowhere else either.
	b := e.browser()
	path, attempt := b.authorize(e, "/")
	a := oidclogin.ParseAttempt(attempt.Value)
	a.Next = "//evil.example/"
	u, _ := url.Parse(e.base + "/login/oidc/callback")
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: attempt.Name, Value: a.Encode(), Path: attempt.Path}})
	if to, ok := signedIn(b.do("GET", path, nil)); !ok || to != "/" {
		t.Errorf("a cookie going to %q: going on to %q (%v)", a.Next, to, ok)
	}
}

// The provider's answer must come back to the browser that began the
// sign-in, with that attempt's state, and its code is used once: each
// refusal is shown with its reason, audited, and opens no session.
func TestOIDCCallbackChecksTheAttempt(t *testing.T) {
	e := newOIDCEnv(t)
	e.idp.SetUser(member("ada", "staff"))
	const logged = "console sign-in with the OpenID Connect provider refused"
	refused := func(t *testing.T, b *browser, path, want string) {
		t.Helper()
		n, lines := len(e.audit.logins()), e.logs.count(logged)
		resp, body := b.do("GET", path, nil)
		if resp.StatusCode != http.StatusUnauthorized || sessionCookie(resp) != nil || !strings.Contains(body, want) {
			t.Fatalf("callback: %d, session %v; want 401 saying %q:\n%.600s", resp.StatusCode, sessionCookie(resp), want, body)
		}
		if resp, _ := b.do("GET", "/", nil); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("a refused callback opened a session: %d", resp.StatusCode)
		}
		got := e.audit.logins()
		if len(got) != n+1 || got[n].Outcome != admin.OutcomeDenied || !strings.Contains(got[n].Detail, want) || got[n].Actor != "" {
			t.Fatalf("audited %+v, want one denied login saying %q", got[n:], want)
		}
		if got := e.logs.count(logged); got != lines+1 {
			t.Fatalf("the refusal was logged %d times, want once", got-lines)
		}
	}
	t.Run("another state", func(t *testing.T) {
		b := e.browser()
		path, _ := b.authorize(e, "/")
		u, _ := url.Parse(path)
		q := u.Query()
		q.Set("state", "forged-"+q.Get("state"))
		refused(t, b, u.Path+"?"+q.Encode(), "its state differs")
	})
	t.Run("another browser", func(t *testing.T) {
		path, _ := e.browser().authorize(e, "/")
		refused(t, e.browser(), path, "no sign-in with Test IdP was begun in this browser")
	})
	t.Run("the same answer twice", func(t *testing.T) {
		b := e.browser()
		path, attempt := b.authorize(e, "/")
		if _, ok := signedIn(b.do("GET", path, nil)); !ok {
			t.Fatal("first use: not signed in")
		}
		// The browser's attempt ended with its sign-in.
		refused(t, e.browser(), path, "no sign-in with Test IdP was begun in this browser")
		// Replayed with the attempt's cookie, the code is refused by the
		// provider: it is used once.
		replay := e.browser()
		u, _ := url.Parse(e.base + "/login/oidc/callback")
		replay.c.Jar.SetCookies(u, []*http.Cookie{{Name: attempt.Name, Value: attempt.Value, Path: attempt.Path}})
		refused(t, replay, path, "Test IdP refused the authorization code: invalid_grant")
	})
	t.Run("the provider's error", func(t *testing.T) {
		b := e.browser()
		path, _ := b.authorize(e, "/")
		u, _ := url.Parse(path)
		q := url.Values{"state": {u.Query().Get("state")}, "error": {"access_denied"}, "error_description": {"the user said no"}}
		refused(t, b, u.Path+"?"+q.Encode(), "Test IdP refused the sign-in: access_denied (the user said no)")
	})
}

// A sign-in whose groups map to no role is refused, naming who signed in
// and their groups, and audited with its actor.
func TestOIDCSignInWithoutARole(t *testing.T) {
	e := newOIDCEnv(t)
	e.idp.SetUser(member("eve", "marketing", "sales"))
	b := e.browser()
	path, _ := b.authorize(e, "/")
	resp, body := b.do("GET", path, nil)
	want := "signed in at Test IdP as eve@example.com, but none of your groups (marketing, sales) maps to a role of myriarchd"
	if resp.StatusCode != http.StatusForbidden || sessionCookie(resp) != nil || !strings.Contains(body, want) {
		t.Fatalf("callback: %d:\n%.600s", resp.StatusCode, body)
	}
	if got := e.audit.last(t); got.Outcome != admin.OutcomeDenied || got.Actor != "oidc:eve@example.com" || !strings.Contains(got.Detail, want) {
		t.Fatalf("audited %+v", got)
	}
}

// A provider down at the start keeps no part of the server from starting
// or being ready; the login page says it is unavailable until it answers.
func TestOIDCProviderDownAtStart(t *testing.T) {
	idp := oidcprovider.Start(t)
	idp.SetDown(true)
	e := startOIDCEnv(t, idp)
	if code, body := e.apiNoAuth("GET", "/readyz"); code != http.StatusOK {
		t.Fatalf("readyz with the provider down: %d %s", code, body)
	}
	_, page := e.browser().do("GET", "/login", nil)
	if !strings.Contains(page, `<button id="oidc" type="button" disabled>Sign in with Test IdP</button>`) ||
		!strings.Contains(page, "Test IdP is unavailable") || !strings.Contains(page, "myriarchd keeps trying") {
		t.Fatalf("login page with the provider down:\n%s", page)
	}
	if resp, body := e.browser().do("GET", "/login/oidc", nil); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "Test IdP is unavailable") {
		t.Fatalf("begin with the provider down: %d %.300s", resp.StatusCode, body)
	}
	if resp := e.browser().login(e.srv.AdminToken()); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the admin token with the provider down: %d", resp.StatusCode)
	}
	idp.SetDown(false)
	e.waitForProvider()
	idp.SetUser(member("ada", "admins"))
	b := e.browser()
	path, _ := b.authorize(e, "/")
	if _, ok := signedIn(b.do("GET", path, nil)); !ok {
		t.Fatal("no sign-in once the provider is up")
	}
}

// Without a provider the login page offers none and its routes say so.
func TestNoOIDCWithoutAProvider(t *testing.T) {
	e := newEnv(t)
	if _, body := e.browser().do("GET", "/login", nil); strings.Contains(body, `id="oidc"`) || strings.Contains(body, "/login/oidc") {
		t.Fatalf("login page offers a provider:\n%s", body)
	}
	for _, path := range []string{"/login/oidc", "/login/oidc/callback?state=x&code=y"} {
		if resp, body := e.browser().do("GET", path, nil); resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "not configured") {
			t.Errorf("%s: %d %.200s", path, resp.StatusCode, body)
		}
	}
}

// Refused answers spend their source's budget of failed logins, as wrong
// passwords do: past it they are answered 429, neither audited nor logged
// one by one; a sign-in still goes through from there, and gives the
// source its budget back.
func TestOIDCRefusalsAreLimited(t *testing.T) {
	e := newOIDCEnv(t)
	b := e.browser()
	for i := range console.LoginBurst {
		if resp, _ := b.do("GET", "/login/oidc/callback?state=x&code=y", nil); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("refusal %d of the budget: %d, want 401", i+1, resp.StatusCode)
		}
	}
	resp, _ := b.do("GET", "/login/oidc/callback?state=x&code=y", nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a refusal beyond the budget: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if n := len(e.audit.logins()); n != console.LoginBurst {
		t.Fatalf("%d refusals audited, want %d", n, console.LoginBurst)
	}
	e.idp.SetUser(member("ada", "staff"))
	path, _ := b.authorize(e, "/")
	if _, ok := signedIn(b.do("GET", path, nil)); !ok {
		t.Fatal("no sign-in from a source out of budget")
	}
	if resp, _ := e.browser().do("GET", "/login/oidc/callback?state=x&code=y", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("after a sign-in the source has no budget back: %d", resp.StatusCode)
	}
}
