package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/admin"
)

// Every route of the admin API and of the console has its rule, and every
// rule its route (on one instance or on several sharing PostgreSQL, which
// add the cluster's).
func TestEveryRouteHasItsRule(t *testing.T) {
	est := newEstate(t)
	single := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	shared := startInstances(t, 1)[0]
	registered := map[string]bool{}
	for _, ts := range []*testServer{single, shared} {
		seen := map[string]bool{}
		for _, p := range append(ts.Admin().Patterns(), ts.Console().Patterns()...) {
			if _, ok := access.Rules[p]; !ok {
				t.Errorf("route %s has no rule", p)
			}
			if seen[p] {
				t.Errorf("route %s is registered twice", p)
			}
			seen[p], registered[p] = true, true
		}
	}
	for p := range access.Rules {
		if !registered[p] {
			t.Errorf("rule %s names no route", p)
		}
	}
}

// principalCase is a principal of the route table test, acting through
// an API key of its own.
type principalCase struct {
	name   string
	role   string
	fleets []string
	key    string
}

// Every route of the admin API, for every role (and fleet scopes): the
// ones the rule refuses are answered 403 with the role they need, the
// others never 401 or 403.
func TestEveryAPIRouteForEveryRole(t *testing.T) {
	est := newEstate(t)
	est.mkdir("teams/data-flow/blueprints")
	est.write("teams/data-flow/blueprints/gw.yaml", configBlueprint)
	est.write("fleets/edge.yaml", "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: data-flow/gw\n")
	est.write("fleets/core.yaml", "name: core\nselector: {site.type: core}\nconfig:\n  blueprint: data-flow/gw\n")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	edgeAgent := ts.startConfigCollector(ts.createToken("edge", nil).Token, "s1")
	cases := []*principalCase{
		{name: "viewer", role: "viewer"},
		{name: "operator", role: "operator"},
		{name: "admin", role: "admin"},
		{name: "edge operator", role: "operator", fleets: []string{"edge"}},
		{name: "edge admin", role: "admin", fleets: []string{"edge"}},
	}
	for _, pc := range cases {
		code, body := ts.api("POST", "/api/v1/apikeys", map[string]any{"name": pc.name, "role": pc.role, "fleets": pc.fleets})
		if code != http.StatusCreated {
			t.Fatalf("key for %s: %d %s", pc.name, code, body)
		}
		var k struct{ Secret string }
		json.Unmarshal(body, &k)
		pc.key = k.Secret
	}
	ts.waitAgent(edgeAgent.uid, "described", func(a admin.Agent) bool { return a.Attributes["site.type"] == "edge" })
	for _, pattern := range ts.Admin().Patterns() {
		rule := access.Rules[pattern]
		method, path, _ := strings.Cut(pattern, " ")
		for _, target := range targetsOf(path, edgeAgent.uid) {
			for _, pc := range cases {
				r, _ := access.ParseRole(pc.role)
				p := access.Principal{Name: pc.name, Kind: access.KindAPIKey, Role: r, Fleets: pc.fleets}
				want := access.Check(p, rule, target.fleet)
				code, body := ts.apiAs(pc.key, method, target.path)
				switch {
				case rule.Public && (code == 401 || code == 403):
					t.Errorf("%s %s as %s: %d, a public route", method, target.path, pc.name, code)
				case !want.Allowed && (code != http.StatusForbidden || !strings.Contains(string(body), `"need": "`+want.Need.String()+`"`)):
					t.Errorf("%s %s as %s: %d %s, want 403 needing %s", method, target.path, pc.name, code, body, want.Need)
				case want.Allowed && (code == http.StatusUnauthorized || code == http.StatusForbidden):
					t.Errorf("%s %s as %s: %d %s, want it allowed", method, target.path, pc.name, code, body)
				}
			}
		}
	}
}

type routeTarget struct {
	path  string
	fleet string // the fleet a change acts on
}

// targetsOf fills a route's path values: a fleet of the principals' scope
// and one outside it, an agent of fleet edge and one of no fleet.
func targetsOf(path string, edgeAgent uuid.UUID) []routeTarget {
	fill := func(name, uid string) string {
		r := strings.NewReplacer("{name}", name, "{uid}", uid, "{id}", "x", "{op}", "pause", "{$}", "")
		return r.Replace(path)
	}
	var out []routeTarget
	switch {
	case strings.Contains(path, "{name}"):
		out = []routeTarget{{fill("edge", ""), "edge"}, {fill("core", ""), "core"}}
	case strings.Contains(path, "{uid}"):
		out = []routeTarget{{fill("", edgeAgent.String()), "edge"}, {fill("", uuid.NewString()), ""}}
	default:
		out = []routeTarget{{fill("", ""), ""}}
	}
	for i := range out {
		if strings.HasPrefix(out[i].path, "/debug/pprof/") {
			out[i].path += "?seconds=1"
		}
	}
	return out
}

// apiAs calls the admin API with a bearer credential.
func (ts *testServer) apiAs(cred, method, path string) (int, []byte) {
	ts.t.Helper()
	req, _ := http.NewRequest(method, "http://"+ts.AdminAddr().String()+path, nil)
	req.Header.Set("Authorization", "Bearer "+cred)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}
