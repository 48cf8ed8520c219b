package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/plan"
	"github.com/myriarch/myriarch/server/servertest"
	"github.com/myriarch/myriarch/test/e2e/site"
)

// myriarchd estate plan against a real server: a change on disk shown
// with its diff, a revision planned, a broken estate's every problem and
// exit 1, a revision that does not exist refused; estate reload applies.
func TestEstatePlanCLI(t *testing.T) {
	est := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", est, "-c", "user.name=Ada", "-c", "user.email=ada@example.com"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(rel, body string) {
		t.Helper()
		if err := site.WriteFile(est, rel, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := site.WriteGatewayBlueprint(est, "127.0.0.1:4318", "otlphttp", "127.0.0.1:9"); err != nil {
		t.Fatal(err)
	}
	write("fleets/gw.yaml", "name: gw\nselector: {site.type: gw}\n"+site.GatewayConfig)
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "gw")

	ts := startTestServer(t, est)
	_, secret, err := ts.Tokens().Create(context.Background(), "gw", nil)
	if err != nil {
		t.Fatal(err)
	}
	col := servertest.Collector(t, ts.OpAMPURL(), secret, "gw-1", "0.149.0", "site.type", "gw", "site.id", "001")
	cli := func(args ...string) (int, string, string) { return ts.cli("", args...) }
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, out, _ := cli("agents", "show", col.UID.String(), "-o", "json")
		if strings.Contains(out, `"syncState": "in_sync"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector never got in sync:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if err := site.WriteGatewayBlueprint(est, "127.0.0.1:4319", "otlphttp", "127.0.0.1:9"); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli("estate", "plan")
	for _, want := range []string{"Plan of the estate directory (sha256:", "1 collectors: 1 to change, 0 new warnings, 0 render errors, 0 target version changes",
		"fleet gw (blueprint data-flow/gateway): 1 of 1 collectors change", "configuration ", "-        endpoint: 127.0.0.1:4318", "+        endpoint: 127.0.0.1:4319"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("estate plan: %d, no %q in\n%s%s", code, want, out, errs)
		}
	}
	git("add", "-A")
	git("commit", "-q", "-m", "port 4319")
	code, out, errs = cli("estate", "plan", "--revision", "HEAD", "--output", "json")
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil || p.Source != "git" || p.Candidate.Author != "Ada <ada@example.com>" || p.Summary.Changed != 1 {
		t.Fatalf("estate plan --revision HEAD --json: %d %v\n%s%s", code, err, out, errs)
	}
	if code, _, errs := cli("estate", "plan", "--revision", "nosuch"); code != 3 || !strings.Contains(errs, `revision "nosuch" does not exist`) {
		t.Fatalf("estate plan --revision nosuch: %d %s", code, errs)
	}
	write("fleets/gw.yaml", "name: gw\nselector: [\n")
	write("fleets/other.yaml", "name: other\n")
	code, out, _ = cli("estate", "plan")
	if code != 1 || !strings.Contains(out, "The estate does not load (2 problems); nothing would change:") ||
		!strings.Contains(out, "fleets/gw.yaml:") || !strings.Contains(out, "fleets/other.yaml:") {
		t.Fatalf("estate plan of a broken estate: %d\n%s", code, out)
	}
	if code, _, errs := cli("estate", "reload"); code != 3 || !strings.Contains(errs, "fleets/gw.yaml") {
		t.Fatalf("estate reload of a broken estate: %d %s", code, errs)
	}
	os.Remove(filepath.Join(est, "fleets/other.yaml"))
	git("checkout", "-q", "--", ".")
	if code, out, errs := cli("estate", "reload"); code != 0 || !strings.Contains(out, "revision") {
		t.Fatalf("estate reload: %d %s %s", code, out, errs)
	}
	if code, out, _ := cli("estate", "plan"); code != 0 || !strings.Contains(out, "1 collectors: 0 to change") {
		t.Fatalf("estate plan after the reload: %d\n%s", code, out)
	}
}
