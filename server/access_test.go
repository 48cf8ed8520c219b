package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/audit"
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
				head := ts.auditHead()
				code, body, rid := ts.apiAsID(pc.key, method, target.path)
				ts.checkAudited(head, rid, pattern, rule, want.Allowed, code, method+" "+target.path+" as "+pc.name)
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
	code, data, _ := ts.apiAsID(cred, method, path)
	return code, data
}

// apiAsID is apiAs, also returning the request id the answer carries.
func (ts *testServer) apiAsID(cred, method, path string) (int, []byte, string) {
	ts.t.Helper()
	req, _ := http.NewRequest(method, "http://"+ts.AdminAddr().String()+path, nil)
	req.Header.Set("Authorization", "Bearer "+cred)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data, resp.Header.Get(admin.RequestIDHeader)
}

// auditHead is the id of the trail's newest record (0 when empty).
func (ts *testServer) auditHead() int64 {
	ts.t.Helper()
	p, err := ts.Audit().List(context.Background(), audit.Query{Limit: 1})
	if err != nil {
		ts.t.Fatal(err)
	}
	if len(p.Records) == 0 {
		return 0
	}
	return p.Records[0].ID
}

// checkAudited checks what a request, answered already, left in the
// trail after record head: a change or a refusal exactly one record, of
// its request id, action and outcome; an allowed read none.
func (ts *testServer) checkAudited(head int64, rid, pattern string, rule access.Rule, allowed bool, code int, what string) {
	ts.t.Helper()
	p, err := ts.Audit().List(context.Background(), audit.Query{Limit: 2})
	if err != nil {
		ts.t.Fatal(err)
	}
	var added []audit.Record
	for _, r := range p.Records {
		if r.ID > head {
			added = append(added, r)
		}
	}
	if allowed && !rule.Change {
		if len(added) != 0 {
			ts.t.Errorf("%s: a read left %d audit records: %+v", what, len(added), added)
		}
		return
	}
	if len(added) != 1 {
		ts.t.Errorf("%s (%d): %d audit records, want 1: %+v", what, code, len(added), added)
		return
	}
	r := added[0]
	outcome := audit.OutcomeOK
	switch {
	case !allowed:
		outcome = audit.OutcomeDenied
	case code >= 400:
		outcome = audit.OutcomeError
	}
	action := rule.Action
	if action == "" { // a refused read
		action = "read " + pattern
	}
	if r.RequestID != rid || r.Outcome != outcome || r.Via != access.ViaAPI || r.Action != action {
		ts.t.Errorf("%s (%d, request %s): audit record %+v, want action %s, outcome %s", what, code, rid, r, action, outcome)
	}
}
