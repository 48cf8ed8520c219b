package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/servertest"
)

// A page offers only the actions its operator's role allows: an operator
// of fleet edge may retry edge and its agents, not core; a viewer may do
// neither; only an admin manages enrollment tokens.
func TestPagesOfferOnlyWhatTheRoleAllows(t *testing.T) {
	e := newEnv(t)
	for _, v := range []string{"0.149.0", "0.149.1"} {
		e.addVersion(v)
	}
	e.fleet("edge", "0.149.1", "")
	e.write("fleets/core.yaml", "name: core\npriority: 10\nselector: {site.type: core}\npackage: otelcol-contrib\ntargetVersion: 0.149.1\n")
	e.reload()
	tok := e.token("site-tokens")
	col := servertest.Collector(t, e.opampURL(), tok, "edge-a", "0.149.0", "site.type", "edge")
	upd := servertest.Updater(t, e.opampURL(), tok, "edge-a", col.UID)
	offer := upd.WaitOffer(t, pkg, "0.149.1")
	upd.ReportPackage(t, offer, pkg, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, 0, "disk full")
	agentPage := "/agents/" + col.UID.String()
	testkit.WaitFor(t, "the failed offer", func() bool {
		_, b := e.api("GET", "/api/v1"+agentPage, nil)
		return strings.Contains(string(b), `"state": "failed"`)
	})
	for _, u := range []struct{ name, role string }{{"vera", "viewer"}, {"otto", "operator"}, {"ada", "admin"}} {
		body := map[string]any{"name": u.name, "role": u.role, "password": "a long enough password"}
		if u.role == "operator" {
			body["fleets"] = []string{"edge"}
		}
		if code, b := e.api("POST", "/api/v1/users", body); code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", u.name, code, b)
		}
	}
	for _, tc := range []struct {
		user    string
		offered []string // in the pages
		not     []string // not in them
	}{
		{"vera", nil, []string{`action="/fleets/edge/retry"`, `action="/fleets/core/retry"`, `action="` + agentPage + `/retry"`, `action="/tokens"`, `/revoke"`}},
		{"otto", []string{`action="/fleets/edge/retry"`, `action="` + agentPage + `/retry"`}, []string{`action="/fleets/core/retry"`, `action="/tokens"`, `/revoke"`}},
		{"ada", []string{`action="/fleets/edge/retry"`, `action="/fleets/core/retry"`, `action="` + agentPage + `/retry"`, `action="/tokens"`, `/revoke"`}, nil},
	} {
		t.Run(tc.user, func(t *testing.T) {
			b := e.browser()
			b.do("GET", "/login", nil)
			if resp, _ := b.do("POST", "/login", url.Values{"csrf": {b.csrf}, "name": {tc.user}, "password": {"a long enough password"}, "next": {"/"}}); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("login: %d", resp.StatusCode)
			}
			var pages string
			for _, path := range []string{"/fleets", agentPage, "/tokens"} {
				resp, body := b.do("GET", path, nil)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%s: %d", path, resp.StatusCode)
				}
				pages += body
			}
			for _, w := range tc.offered {
				if !strings.Contains(pages, w) {
					t.Errorf("%s is not offered %s", tc.user, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(pages, w) {
					t.Errorf("%s is offered %s", tc.user, w)
				}
			}
		})
	}
}
