package server_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/audit"
	"github.com/myriarch/myriarch/server/plan"
)

// git runs git in the estate, as a user who commits.
func (e *testEstate) git(args ...string) string {
	e.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", e.dir, "-c", "user.name=Ada Lovelace", "-c", "user.email=ada@example.com"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (e *testEstate) commit(msg string) string {
	e.t.Helper()
	e.git("add", "-A")
	e.git("commit", "-q", "-m", msg)
	return e.git("rev-parse", "HEAD")
}

// planOf asks for a plan: rev "" for the directory as it is.
func (ts *testServer) planOf(rev string) (int, plan.Plan, string) {
	ts.t.Helper()
	var body any
	if rev != "" {
		body = map[string]string{"revision": rev}
	}
	code, out := ts.api("POST", "/api/v1/estate/plan", body)
	var p plan.Plan
	if code == 200 {
		if err := json.Unmarshal(out, &p); err != nil {
			ts.t.Fatalf("plan: %v\n%s", err, out)
		}
	}
	return code, p, string(out)
}

func fleetOf(t *testing.T, p plan.Plan, name string) plan.Fleet {
	t.Helper()
	for _, f := range p.Fleets {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no fleet %s in the plan: %+v", name, p.Fleets)
	return plan.Fleet{}
}

// A plan says what a candidate estate would change — the directory as it
// is, or a Git revision — and changes nothing: configurations with a diff
// per distinct body, warnings and render errors, target versions; a broken
// candidate lists every problem; a revision that does not exist, is not a
// revision name, or whose files leave the estate is refused with the
// reason.
func TestEstatePlan(t *testing.T) {
	est := newEstate(t)
	est.mkdir("teams/data-flow/blueprints")
	est.addVersion("0.149.0")
	est.addVersion("0.150.0")
	est.write("teams/data-flow/blueprints/gw.yaml", configBlueprint)
	fleet := "name: edge\nselector: {site.type: edge}\npackage: " + pkgName + "\ntargetVersion: %s\nconfig:\n  blueprint: data-flow/gw\n"
	est.write("fleets/edge.yaml", strings.Replace(fleet, "%s", "0.149.0", 1))
	est.git("init", "-q")
	first := est.commit("edge on 0.149.0")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	tok := ts.createToken("edge", nil).Token
	cols := []*configCollector{ts.startConfigCollector(tok, "s1"), ts.startConfigCollector(tok, "s2"), ts.startConfigCollector(tok, "s3")}
	hashes := map[uuid.UUID]string{}
	for _, c := range cols {
		a := ts.waitAgent(c.uid, "in sync", syncState("in_sync"))
		hashes[c.uid] = deref(assignmentOf(t, a).Assigned)
	}
	unchanged := func(when string) {
		t.Helper()
		for _, c := range cols {
			a, _ := ts.agent(c.uid)
			if h := deref(assignmentOf(t, a).Assigned); h != hashes[c.uid] {
				t.Fatalf("%s: %s's assigned configuration moved: %s → %s", when, c.uid, hashes[c.uid], h)
			}
		}
		var st server.EstateStatus
		_, out := ts.api("GET", "/api/v1/estate", nil)
		json.Unmarshal(out, &st)
		if deref(st.Revision) != first {
			t.Fatalf("%s: the estate in force is %s, want %s", when, deref(st.Revision), first)
		}
	}
	auditHead := ts.auditHead()

	// The estate as it is on disk: no change.
	code, p, out := ts.planOf("")
	if code != 200 || !p.OK || p.Summary.Collectors != 3 || p.Summary.Changed != 0 || p.Source != "directory" || p.Candidate.Revision != first {
		t.Fatalf("plan of an unchanged estate: %d %+v\n%s", code, p.Summary, out)
	}

	// A change on disk, not committed: every collector changes, one body
	// each (their site differs), each with its diff.
	est.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(configBlueprint, "endpoint: 127.0.0.1:4318", "endpoint: 127.0.0.1:4319", 1))
	code, p, out = ts.planOf("")
	f := fleetOf(t, p, "edge")
	if code != 200 || !p.OK || p.Summary.Changed != 3 || len(f.Changed) != 3 || len(f.Bodies) != 3 || f.Version != nil ||
		!strings.HasPrefix(p.Candidate.Revision, "sha256:") {
		t.Fatalf("plan of a changed Blueprint: %d %+v\n%s", code, p.Summary, out)
	}
	for _, b := range f.Bodies {
		if b.Collectors != 1 || b.From != hashes[b.Representative] || !strings.Contains(b.Diff, "-        endpoint: 127.0.0.1:4318\n+        endpoint: 127.0.0.1:4319\n") ||
			!strings.HasPrefix(b.Diff, "--- "+b.Representative.String()+" "+b.From[:12]) {
			t.Fatalf("body %+v", b)
		}
	}
	unchanged("after a plan of the directory")

	// Committed, with a new target version: planned by revision, named
	// by its commit and author.
	est.write("fleets/edge.yaml", strings.Replace(fleet, "%s", "0.150.0", 1))
	second := est.commit("edge on 0.150.0, new endpoint")
	code, p, out = ts.planOf("HEAD")
	f = fleetOf(t, p, "edge")
	if code != 200 || p.Source != "git" || p.Candidate != (plan.Revision{Revision: second, Author: "Ada Lovelace <ada@example.com>"}) ||
		p.Summary.Changed != 3 || p.Summary.VersionChanges != 3 || f.Version == nil || *f.Version != (plan.VersionChange{From: "0.149.0", To: "0.150.0", Collectors: 3}) {
		t.Fatalf("plan of HEAD: %d %+v %+v\n%s", code, p.Candidate, f.Version, out)
	}
	// The revision in force: nothing would change.
	if code, p, out = ts.planOf(first[:10]); code != 200 || p.Summary.Changed != 0 || p.Summary.VersionChanges != 0 {
		t.Fatalf("plan of the revision in force: %d %+v\n%s", code, p.Summary, out)
	}

	// A variable no collector has drops the only receiver: every pipeline
	// lost its receivers, a render error for each collector (which keeps
	// its configuration); with a second receiver, a warning for each.
	est.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(configBlueprint, "endpoint: 127.0.0.1:4318", "endpoint: ${site.nosuch}:4318", 1))
	est.commit("a variable no collector has")
	code, p, out = ts.planOf("HEAD")
	f = fleetOf(t, p, "edge")
	if code != 200 || p.Summary.Warnings != 0 || p.Summary.RenderErrors != 3 || len(f.Errors) != 3 {
		t.Fatalf("plan of a Blueprint whose only receiver is dropped: %d %+v\n%s", code, p.Summary, out)
	}
	if !strings.Contains(f.Errors[0].Error, "site.nosuch") {
		t.Fatalf("render error %q", f.Errors[0].Error)
	}
	twoReceivers := strings.Replace(configBlueprint, "  - name: out\n", `  - name: tap
    class: receiver
    type: otlp
    version: 1
    config:
      protocols:
        grpc:
          endpoint: ${site.nosuch}:4317
  - name: out
`, 1)
	twoReceivers = strings.Replace(twoReceivers, "    - component: in\n", "    - component: in\n    - component: tap\n", 1)
	est.write("teams/data-flow/blueprints/gw.yaml", twoReceivers)
	est.commit("a second receiver with a variable no collector has")
	code, p, out = ts.planOf("HEAD")
	f = fleetOf(t, p, "edge")
	if code != 200 || p.Summary.Warnings != 3 || len(f.Warnings) != 3 || f.Warnings[0].Warning.Kind != "receiver_dropped" || f.Warnings[0].Warning.Variable != "${site.nosuch}" {
		t.Fatalf("plan of a Blueprint with a receiver dropped: %d %+v %+v\n%s", code, p.Summary, f.Warnings, out)
	}

	// A broken estate: every problem, nothing else.
	est.write("fleets/edge.yaml", "name: edge\nselector: [\n")
	est.write("fleets/core.yaml", "name: core\nselector: {site.type: core}\npackage: nosuch\ntargetVersion: 1.0.0\n")
	code, p, out = ts.planOf("")
	if code != 200 || p.OK || len(p.Errors) != 2 || len(p.Fleets) != 0 || p.Errors[0].File != "fleets/core.yaml" || p.Errors[1].File != "fleets/edge.yaml" {
		t.Fatalf("plan of a broken estate: %d\n%s", code, out)
	}
	est.git("checkout", "-q", "--", ".")
	os.Remove(filepath.Join(est.dir, "fleets/core.yaml"))

	// Refused revisions, each with its reason.
	os.Symlink("/etc/passwd", filepath.Join(est.dir, "inventory", "hosts.yaml"))
	leaves := est.commit("a link out of the estate")
	os.Remove(filepath.Join(est.dir, "inventory", "hosts.yaml"))
	os.Symlink("../../../outside.yaml", filepath.Join(est.dir, "inventory", "hosts.yaml"))
	climbs := est.commit("a relative link out of the estate")
	for _, tc := range []struct{ rev, want string }{
		{"nosuch-branch", `revision "nosuch-branch" does not exist`},
		{strings.Repeat("0", 40), "does not exist"},
		{"--output=/tmp/x", "is not a Git revision name"},
		{"HEAD..main", "is not a Git revision name"},
		{leaves, "inventory/hosts.yaml is a link to /etc/passwd, which leaves the estate"},
		{climbs, "inventory/hosts.yaml is a link to ../../../outside.yaml, which leaves the estate"},
	} {
		code, _, out := ts.planOf(tc.rev)
		if code != 400 || !strings.Contains(errorOf(out), tc.want) {
			t.Errorf("plan of %q: %d %s, want 400 saying %q", tc.rev, code, out, tc.want)
		}
	}
	if code, out := ts.api("POST", "/api/v1/estate/plan", map[string]any{"revision": "HEAD", "apply": true}); code != 400 || !strings.Contains(errorOf(string(out)), "request body: property \"apply\" is unsupported") {
		t.Errorf("an unknown field: %d %s", code, out)
	}
	unchanged("after every plan")
	if p, err := ts.Audit().List(context.Background(), audit.Query{Limit: 10}); err != nil || len(p.Records) > 0 && p.Records[0].ID != auditHead {
		t.Fatalf("a plan wrote to the audit trail: %+v %v", p.Records, err)
	}
}

// An estate that is not a Git checkout has no revisions to plan.
func TestEstatePlanWithoutGit(t *testing.T) {
	est := newEstate(t)
	est.write("fleets/edge.yaml", "name: edge\nselector: {site.type: edge}\n")
	est.addVersion("0.149.0")
	est.write("fleets/edge.yaml", "name: edge\nselector: {site.type: edge}\npackage: "+pkgName+"\ntargetVersion: 0.149.0\n")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	if code, _, out := ts.planOf("HEAD"); code != 400 || !strings.Contains(out, "not in a Git work tree") {
		t.Fatalf("plan of HEAD without Git: %d %s", code, out)
	}
	if code, p, out := ts.planOf(""); code != 200 || !p.OK || p.Source != "directory" {
		t.Fatalf("plan of the directory: %d %s", code, out)
	}
	noEstate := startServer(t)
	if code, _, out := noEstate.planOf(""); code != 409 || !strings.Contains(out, "no estate configured") {
		t.Fatalf("plan without an estate: %d %s", code, out)
	}
}

// errorOf is the message of an error answer.
func errorOf(body string) string {
	var e struct{ Error string }
	json.Unmarshal([]byte(body), &e)
	return e.Error
}
