package oidclogin_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testenv/oidcprovider"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/oidclogin"
)

const redirect = "http://127.0.0.1:4321/login/oidc/callback"

var roles = oidclogin.Roles{
	"platform-admins": {Role: "admin"},
	"sre":             {Role: "operator", Fleets: []string{"edge"}},
	"everyone":        {Role: "viewer"},
}

// newRP starts a provider and a relying party of it, and waits until the
// relying party has read the provider's discovery document.
func newRP(t *testing.T) (*oidcprovider.Provider, *oidclogin.RP) {
	t.Helper()
	p := oidcprovider.Start(t)
	p.Register(oidcprovider.Client{ID: "myriarch", Secret: "client-s3cret", RedirectURI: redirect})
	rp := oidclogin.New(oidclogin.Options{Secret: "client-s3cret", RedirectURL: func() string { return redirect },
		Settings: oidclogin.Settings{Issuer: p.Issuer(), ClientID: "myriarch", Name: "Test IdP", Roles: roles}})
	rp.Start()
	t.Cleanup(rp.Close)
	testkit.WaitFor(t, "the provider discovered", func() bool { return rp.Available() == nil })
	return p, rp
}

var noFollow = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// authorize goes from the provider's authorization URL through its login
// step to the answer it sends the browser back with (the callback's query).
func authorize(t *testing.T, p *oidcprovider.Provider, authURL string) url.Values {
	t.Helper()
	step := func(req *http.Request) *url.URL {
		t.Helper()
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := resp.Location()
		if resp.StatusCode/100 != 3 || err != nil {
			t.Fatalf("%s %s: %d, want a redirect", req.Method, req.URL, resp.StatusCode)
		}
		return loc
	}
	get := func(u string) *http.Request { r, _ := http.NewRequest("GET", u, nil); return r }
	login := step(get(authURL)) // to the login step
	form := url.Values{"id": {login.Query().Get("id")}}
	post, _ := http.NewRequest("POST", p.Issuer()+"/login", strings.NewReader(form.Encode()))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	back := step(get(step(post).String())) // approved, then op's callback
	if got := back.Scheme + "://" + back.Host + back.Path; got != redirect {
		t.Fatalf("the provider answered at %s, want %s", got, redirect)
	}
	return back.Query()
}

// signIn begins a sign-in and finishes it with the provider's answer.
func signIn(t *testing.T, p *oidcprovider.Provider, rp *oidclogin.RP) (access.Principal, error) {
	t.Helper()
	a, authURL, err := rp.Begin("/agents")
	if err != nil {
		t.Fatal(err)
	}
	return rp.Finish(context.Background(), a, authorize(t, p, authURL))
}

func TestSignIn(t *testing.T) {
	p, rp := newRP(t)
	groups := func(v any) map[string]any { return map[string]any{"groups": v} }
	for _, tc := range []struct {
		name string
		user oidcprovider.User
		want access.Principal
	}{
		{"a verified email names the principal",
			oidcprovider.User{Subject: "u1", Email: "ada@example.com", EmailVerified: true, Username: "ada", Claims: groups([]string{"sre", "everyone"})},
			access.Principal{Name: "ada@example.com", Kind: access.KindOIDC, Role: access.Operator, Fleets: []string{"edge"}}},
		{"an unverified email does not",
			oidcprovider.User{Subject: "u2", Email: "bob@example.com", Username: "bob", Claims: groups([]string{"everyone"})},
			access.Principal{Name: "bob", Kind: access.KindOIDC, Role: access.Viewer}},
		{"the subject without either",
			oidcprovider.User{Subject: "u3", Claims: groups("platform-admins")},
			access.Principal{Name: "u3", Kind: access.KindOIDC, Role: access.Admin}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.SetUser(tc.user)
			got, err := signIn(t, p, rp)
			if err != nil || got.Name != tc.want.Name || got.Kind != tc.want.Kind || got.Role != tc.want.Role || !slices.Equal(got.Fleets, tc.want.Fleets) {
				t.Fatalf("signed in as %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// Every sign-in the relying party must refuse is refused with its reason.
func TestSignInRefused(t *testing.T) {
	p, rp := newRP(t)
	ada := oidcprovider.User{Subject: "u1", Email: "ada@example.com", EmailVerified: true, Claims: map[string]any{"groups": []string{"sre"}}}
	for _, tc := range []struct {
		name  string
		user  oidcprovider.User
		fault oidcprovider.Fault
		want  string
		who   string // the Refusal's name
	}{
		{"wrong audience", ada, oidcprovider.WrongAudience, `the ID token of Test IdP was refused: oidc: expected audience "myriarch"`, ""},
		{"expired", ada, oidcprovider.Expired, "the ID token of Test IdP expired at", ""},
		{"signed with another key", ada, oidcprovider.OtherKey, "the ID token of Test IdP was refused: failed to verify signature", ""},
		{"another nonce", ada, oidcprovider.WrongNonce, "does not carry the nonce of the sign-in this browser began", ""},
		{"no value maps to a role",
			oidcprovider.User{Subject: "u9", Email: "eve@example.com", EmailVerified: true, Claims: map[string]any{"groups": []string{"marketing", "sales"}}},
			oidcprovider.NoFault, "signed in at Test IdP as eve@example.com, but none of your groups (marketing, sales) maps to a role of myriarchd", "eve@example.com"},
		{"no role claim", oidcprovider.User{Subject: "u9"}, oidcprovider.NoFault,
			"signed in at Test IdP as u9, but none of your groups (none) maps to a role of myriarchd", "u9"},
		{"a role claim of another type", oidcprovider.User{Subject: "u9", Claims: map[string]any{"groups": 7}}, oidcprovider.NoFault,
			"the groups claim of the ID token of Test IdP is neither a string nor a list of strings", "u9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.SetUser(tc.user)
			p.SetFault(tc.fault)
			defer p.SetFault(oidcprovider.NoFault)
			got, err := signIn(t, p, rp)
			var r *oidclogin.Refusal
			if !errors.As(err, &r) || !strings.Contains(r.Reason, tc.want) || r.Name != tc.who || got.Role != access.None {
				t.Fatalf("got %+v, %v; want a refusal %q naming %q", got, err, tc.want, tc.who)
			}
		})
	}
}

// The provider's answer must belong to the attempt it finishes: its
// state, its PKCE verifier, a code used once.
func TestSignInChecksTheAttempt(t *testing.T) {
	p, rp := newRP(t)
	p.SetUser(oidcprovider.User{Subject: "u1", Claims: map[string]any{"groups": "everyone"}})
	ctx := context.Background()
	refused := func(t *testing.T, what string, err error, want string) {
		t.Helper()
		var r *oidclogin.Refusal
		if !errors.As(err, &r) || !strings.Contains(r.Reason, want) {
			t.Fatalf("%s: %v, want a refusal %q", what, err, want)
		}
	}
	t.Run("no attempt", func(t *testing.T) {
		_, err := rp.Finish(ctx, oidclogin.Attempt{}, url.Values{"state": {""}, "code": {"x"}})
		refused(t, "no attempt", err, "no sign-in with Test IdP was begun in this browser")
	})
	t.Run("another attempt's state", func(t *testing.T) {
		a, authURL, _ := rp.Begin("/")
		b, _, _ := rp.Begin("/")
		q := authorize(t, p, authURL)
		_, err := rp.Finish(ctx, b, q)
		refused(t, "another state", err, "does not belong to the sign-in this browser began (its state differs)")
		if _, err := rp.Finish(ctx, a, q); err != nil {
			t.Fatalf("the attempt's own answer: %v", err)
		}
	})
	t.Run("the provider's error", func(t *testing.T) {
		a, _, _ := rp.Begin("/")
		_, err := rp.Finish(ctx, a, url.Values{"state": {a.State}, "error": {"access_denied"}, "error_description": {"the user said no"}})
		refused(t, "error", err, "Test IdP refused the sign-in: access_denied (the user said no)")
	})
	t.Run("no code", func(t *testing.T) {
		a, _, _ := rp.Begin("/")
		_, err := rp.Finish(ctx, a, url.Values{"state": {a.State}})
		refused(t, "no code", err, "Test IdP answered without an authorization code")
	})
	t.Run("a code used twice", func(t *testing.T) {
		a, authURL, _ := rp.Begin("/")
		q := authorize(t, p, authURL)
		if _, err := rp.Finish(ctx, a, q); err != nil {
			t.Fatalf("first use: %v", err)
		}
		_, err := rp.Finish(ctx, a, q)
		refused(t, "second use", err, "Test IdP refused the authorization code: invalid_grant")
	})
	t.Run("another PKCE verifier", func(t *testing.T) {
		a, authURL, _ := rp.Begin("/")
		q := authorize(t, p, authURL)
		b, _, _ := rp.Begin("/")
		a.Verifier = b.Verifier
		_, err := rp.Finish(ctx, a, q)
		refused(t, "another verifier", err, "Test IdP refused the authorization code: invalid_grant")
	})
}

func TestAttemptCookie(t *testing.T) {
	a := oidclogin.Attempt{State: "s", Nonce: "n", Verifier: "v", Next: "/agents?kind=collector"}
	if got := oidclogin.ParseAttempt(a.Encode()); got != a {
		t.Fatalf("round trip: %+v", got)
	}
	for _, v := range []string{"", "%%%", "bm90IGpzb24"} {
		if got := oidclogin.ParseAttempt(v); got != (oidclogin.Attempt{}) {
			t.Errorf("ParseAttempt(%q) = %+v, want none", v, got)
		}
	}
}
