package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/server/access"
)

// signIn logs a user in with a password through the login form.
func (b *browser) signIn(name, password string) *http.Response {
	b.e.t.Helper()
	b.do("GET", "/login", nil)
	resp, _ := b.do("POST", "/login", url.Values{"csrf": {b.csrf}, "name": {name}, "password": {password}, "next": {"/"}})
	if resp.StatusCode == http.StatusSeeOther {
		b.do("GET", "/", nil) // picks the session's CSRF token
	}
	return resp
}

// user creates a user through the admin API.
func (e *env) user(name, role string, fleets []string) {
	e.t.Helper()
	body := map[string]any{"name": name, "role": role, "password": "correct horse battery"}
	if fleets != nil {
		body["fleets"] = fleets
	}
	if code, b := e.api("POST", "/api/v1/users", body); code != http.StatusCreated {
		e.t.Fatalf("create user %s: %d %s", name, code, b)
	}
}

// Every console route for every role: what the rule refuses answers 403
// (and is not carried out), the rest is served; pages show only the
// buttons the role may use.
func TestEveryConsoleRouteForEveryRole(t *testing.T) {
	e := newEnv(t)
	e.addVersion("0.1.0")
	e.fleet("edge", "0.1.0", "")
	e.fleet("core", "0.1.0", "")
	e.reload()
	cases := []struct {
		name   string
		role   access.Role
		fleets []string
	}{
		{"vera", access.Viewer, nil},
		{"otto", access.Operator, nil},
		{"ada", access.Admin, nil},
		{"eddy", access.Operator, []string{"edge"}},
	}
	for _, pc := range cases {
		e.user(pc.name, pc.role.String(), pc.fleets)
	}
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			b := e.browser()
			if resp := b.signIn(pc.name, "correct horse battery"); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("sign-in: %d", resp.StatusCode)
			}
			who := access.Principal{Name: pc.name, Kind: access.KindUser, Role: pc.role, Fleets: pc.fleets}
			for _, pattern := range e.srv.Console().Patterns() {
				rule := access.Rules[pattern]
				method, path, ok := strings.Cut(pattern, " ")
				if !ok { // the catch-all
					method, path = "GET", "/no/such/page"
				}
				if rule.Public || pattern == "POST /logout" || pattern == "GET /events" {
					continue // the login pages and assets; logout and live streams below
				}
				for _, fleet := range []string{"edge", "core"} {
					p := strings.NewReplacer("{name}", fleet, "{op}", "pause", "{id}", "x", "{uid}", "0190a3a5-0000-7000-8000-000000000000", "{$}", "").Replace(path)
					var form url.Values
					if method == "POST" {
						form = url.Values{"csrf": {b.csrf}, "name": {"t-" + pc.name + "-" + fleet}}
					}
					resp, body := b.do(method, p, form)
					target := ""
					if rule.Scope == access.Fleet {
						target = fleet
					}
					want := access.Check(who, rule, target)
					switch {
					case !want.Allowed && resp.StatusCode != http.StatusForbidden:
						t.Errorf("%s %s as %s: %d, want 403 (%s)", method, p, pc.name, resp.StatusCode, want.Reason)
					case want.Allowed && resp.StatusCode == http.StatusForbidden:
						t.Errorf("%s %s as %s: 403 %.200s, want it allowed", method, p, pc.name, body)
					}
				}
			}
			// Buttons: pause only where the role may, tokens managed by admins.
			_, fleets := b.do("GET", "/fleets", nil)
			_, tokens := b.do("GET", "/tokens", nil)
			for _, fleet := range []string{"edge", "core"} {
				mayPause := access.Check(who, access.Rules["POST /fleets/{name}/{op}"], fleet).Allowed
				if has := strings.Contains(fleets, `action="/fleets/`+fleet+`/`); has != mayPause {
					t.Errorf("fleet %s's buttons shown: %v, may act: %v", fleet, has, mayPause)
				}
			}
			if has := strings.Contains(tokens, `action="/tokens"`); has != (pc.role == access.Admin) {
				t.Errorf("the create-token form shown to a %s: %v", pc.role, has)
			}
			if resp, _ := b.do("POST", "/logout", url.Values{"csrf": {b.csrf}}); resp.StatusCode != http.StatusSeeOther {
				t.Errorf("logout: %d", resp.StatusCode)
			}
		})
	}
}

// A user signs in with a password; a wrong one, an unknown user and a user
// without a password are refused alike.
func TestSignInWithAPassword(t *testing.T) {
	e := newEnv(t)
	e.user("ada", "admin", nil)
	if code, b := e.api("POST", "/api/v1/users", map[string]any{"name": "nopw", "role": "viewer"}); code != http.StatusCreated {
		t.Fatalf("user without a password: %d %s", code, b)
	}
	for _, bad := range [][2]string{{"ada", "not the password"}, {"nobody", "correct horse battery"}, {"nopw", ""}} {
		b := e.browser()
		resp := b.signIn(bad[0], bad[1])
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s with %q: %d, want 401", bad[0], bad[1], resp.StatusCode)
		}
		if resp, _ := b.do("GET", "/", nil); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("a refused sign-in opened a session: %d", resp.StatusCode)
		}
	}
	b := e.browser()
	if resp := b.signIn("ada", "correct horse battery"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", resp.StatusCode)
	}
	if resp, body := b.do("GET", "/tokens", nil); resp.StatusCode != 200 || !strings.Contains(body, `action="/tokens"`) {
		t.Fatalf("an admin's tokens page: %d", resp.StatusCode)
	}
}
