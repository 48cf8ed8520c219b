package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/blueprint"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/configs"
	"github.com/myriarch/myriarch/server/servertest"
	"github.com/myriarch/myriarch/test/e2e/site"
)

// A Blueprint checked against what a fleet's collectors have today, read
// from a real server (GET /api/v1/fleets/{name}/variables): a reference no
// member can resolve is a finding naming it; one they all have, one with a
// constant fallback, and one another member has are not.
func TestContextFromFleet(t *testing.T) {
	est := t.TempDir()
	bp := `name: gateway
version: 1
owner: data-flow-owners
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
    config:
      protocols:
        http:
          endpoint: ${site.listen|'127.0.0.1:4318'}
  - name: tap
    class: receiver
    type: otlp
    version: 1
    config:
      protocols:
        grpc:
          endpoint: ${site.tap}:4317
  - name: out
    class: exporter
    type: otlphttp
    version: 1
    config:
      endpoint: http://127.0.0.1:9/sites/${site.id}/${site.rack}/${dockr.container.id}
pipelines:
  logs:
    - component: in
    - component: tap
    - component: out
`
	if err := site.WriteFile(est, "teams/data-flow/blueprints/gateway.yaml", bp); err != nil {
		t.Fatal(err)
	}
	if err := site.WriteFile(est, "fleets/gw.yaml", "name: gw\nselector: {site.type: gw}\n"+site.GatewayConfig); err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	s := servertest.StartServer(t, server.Options{DataDir: dataDir, Estate: est})
	_, secret, err := s.Tokens().Create(context.Background(), "gw", nil)
	if err != nil {
		t.Fatal(err)
	}
	servertest.Collector(t, s.OpAMPURL(), secret, "gw-1", "0.149.0", "site.type", "gw", "site.id", "001", "site.rack", "r1")
	servertest.Collector(t, s.OpAMPURL(), secret, "gw-2", "0.149.0", "site.type", "gw", "site.id", "002")
	admin := "http://" + s.AdminAddr().String()
	t.Setenv("MYRIARCH_ADMIN_TOKEN", s.AdminToken())

	var fv configs.FleetVariables
	deadline := time.Now().Add(20 * time.Second)
	for fv.Members < 2 {
		code, out, errs := check("--root", est, "--context-from-fleet", "gw", "--admin", admin, "--json")
		if time.Now().After(deadline) {
			t.Fatalf("the fleet never had both members: %d\n%s%s", code, out, errs)
		}
		var rep struct{ Findings []blueprint.Finding }
		json.Unmarshal([]byte(out), &rep)
		for _, f := range rep.Findings {
			if strings.Contains(f.Message, "(2 collectors)") {
				fv.Members = 2
			}
		}
		if fv.Members < 2 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	code, out, errs := check("--root", est, "--context-from-fleet", "gw", "--admin", admin, "--json", "--strict")
	var rep struct{ Findings []blueprint.Finding }
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 2 {
		t.Fatalf("blueprint-check --strict: %d %v\n%s%s", code, err, out, errs)
	}
	var fleetFindings []string
	for _, f := range rep.Findings {
		if f.Lane == "fleet gw" {
			if f.Kind != blueprint.KindVariable || f.Blueprint != "data-flow/gateway" || f.Owner != "data-flow-owners" {
				t.Errorf("finding %+v", f)
			}
			fleetFindings = append(fleetFindings, f.Message)
		}
	}
	want := []string{
		"no member of fleet gw (2 collectors) can resolve ${site.tap} today: none has site.tap",
		"no member of fleet gw (2 collectors) can resolve ${dockr.container.id} today: none has dockr.container.id",
	}
	if len(fleetFindings) != len(want) {
		t.Fatalf("fleet findings %q, want %q", fleetFindings, want)
	}
	for _, w := range want {
		found := false
		for _, f := range fleetFindings {
			found = found || f == w
		}
		if !found {
			t.Errorf("no finding %q in %q", w, fleetFindings)
		}
	}
	if code, _, errs := check("--root", est, "--context-from-fleet", "nosuch", "--admin", admin); code != 1 || !strings.Contains(errs, "no fleet nosuch with a configuration") {
		t.Fatalf("an unknown fleet: %d %s", code, errs)
	}
}
