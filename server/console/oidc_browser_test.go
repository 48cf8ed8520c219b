package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/myriarch/myriarch/internal/testenv/oidcprovider"
	"github.com/myriarch/myriarch/server/admin"
)

// signInWith signs in with the provider as u: the login page's button,
// the provider's login step (on another site), and back.
func (c *chrome) signInWith(e *oidcEnv, what string, u oidcprovider.User) {
	c.t.Helper()
	e.idp.SetUser(u)
	c.do(what+": the login page", chromedp.Navigate(e.base+"/fleets"), chromedp.WaitVisible(chromedp.ID("oidc")))
	c.load(what+": to the provider", chromedp.Click(chromedp.ID("oidc")))
	if host := c.eval("provider", `location.origin`); string(host) != js(e.idp.Issuer()) {
		c.t.Fatalf("%s: at %s, want the provider %s", what, host, e.idp.Issuer())
	}
	c.loadSettled(what+": sign in at the provider", chromedp.Click(chromedp.ID("approve")))
}

// loadSettled runs actions that navigate and waits for a page to have
// loaded that does not go on at once to another (a meta refresh).
func (c *chrome) loadSettled(what string, actions ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	loaded := chromedp.Events(ctx, page.LoadEventFired)
	if err := chromedp.Do(ctx, actions...); err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
	for _, err := range loaded {
		if err != nil {
			c.t.Fatalf("%s: waiting for the page: %v", what, err)
		}
		settled, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.querySelector('meta[http-equiv="refresh"]') && document.readyState === 'complete'`))
		if err == nil && settled {
			return
		}
	}
}

// cookies names the cookies the browser holds for the console.
func (c *chrome) cookies(base string) []string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	res, err := chromedp.Run(ctx, func(ctx context.Context, t *chromedp.Target) (network.GetCookiesResult, error) {
		return cdp.Call(ctx, t, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/", base + "/login/oidc/callback"}})
	})
	if err != nil {
		c.t.Fatalf("cookies: %v", err)
	}
	var names []string
	for _, ck := range res.Cookies {
		names = append(names, ck.Name)
	}
	return names
}

// TestOIDCInBrowser signs in with an OpenID Connect provider in headless
// Chromium, against a real myriarchd and a real provider on another site:
// an operator of fleet edge sees its pause button, a viewer does not; ID
// tokens with a wrong audience, an expiry past, another key's signature or
// another nonce, and an account whose groups map to no role, are refused
// with their reason on the login page, audited, and leave no session.
func TestOIDCInBrowser(t *testing.T) {
	e := newOIDCEnv(t)
	e.addVersion("0.149.0")
	e.fleet("edge", "0.149.0", "")
	e.reload()
	shots := screenshotDir(t)
	c := newChrome(t)

	c.do("login page", chromedp.Navigate(e.base+"/login"), chromedp.WaitVisible(chromedp.ID("oidc")))
	if b := c.text("#oidc"); b != "Sign in with Test IdP" {
		t.Fatalf("the provider's button says %q", b)
	}
	c.screenshot(shots, "login-oidc.png")

	// An operator of edge: the fleet's pause button.
	c.signInWith(e, "operator", member("ada", "staff", "edge-ops"))
	if h := c.text("h1"); h != "Fleets" {
		t.Fatalf("after the sign-in: %q\n%s", h, c.text("main"))
	}
	c.do("pause button", chromedp.WaitVisible(chromedp.CSS(`form[action="/fleets/edge/pause"] button`)))
	if got := e.audit.last(t); got.Outcome != admin.OutcomeOK || got.Actor != "oidc:ada@example.com" || got.Role != "operator" {
		t.Fatalf("audited %+v", got)
	}
	c.logOut()

	// A viewer: no pause button.
	c.signInWith(e, "viewer", member("vic", "staff"))
	if h := c.text("h1"); h != "Fleets" {
		t.Fatalf("after the viewer's sign-in: %q", h)
	}
	if n := c.eval("pause buttons", `document.querySelectorAll('form[action^="/fleets/"]').length`); string(n) != "0" {
		t.Fatalf("a viewer is offered %s fleet actions", n)
	}
	c.logOut()

	for _, tc := range []struct {
		name  string
		user  oidcprovider.User
		fault oidcprovider.Fault
		want  string
	}{
		{"wrong audience", member("ada", "admins"), oidcprovider.WrongAudience, `expected audience "myriarch"`},
		{"expired", member("ada", "admins"), oidcprovider.Expired, "the ID token of Test IdP expired at"},
		{"another key", member("ada", "admins"), oidcprovider.OtherKey, "failed to verify signature"},
		{"another nonce", member("ada", "admins"), oidcprovider.WrongNonce, "does not carry the nonce of the sign-in this browser began"},
		{"no role", member("eve", "marketing"), oidcprovider.NoFault,
			"signed in at Test IdP as eve@example.com, but none of your groups (marketing) maps to a role of myriarchd"},
	} {
		e.idp.SetFault(tc.fault)
		c.signInWith(e, tc.name, tc.user)
		e.idp.SetFault(oidcprovider.NoFault)
		if msg := c.text("p.error"); !strings.Contains(msg, "Sign-in refused: ") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: the login page says %q, want %q", tc.name, msg, tc.want)
		}
		if got := e.audit.last(t); got.Outcome != admin.OutcomeDenied || !strings.Contains(got.Detail, tc.want) {
			t.Errorf("%s: audited %+v", tc.name, got)
		}
		for _, name := range c.cookies(e.base) {
			if name == "myriarch_console" || name == "myriarch_oidc" {
				t.Errorf("%s: the browser keeps the cookie %s", tc.name, name)
			}
		}
		if tc.name == "no role" {
			c.screenshot(shots, "login-oidc-refused.png")
		}
	}
	c.do("still logged out", chromedp.Navigate(e.base+"/fleets"), chromedp.WaitVisible(chromedp.ID("token")))
	c.checkNoProblems()
}
