package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/offers"
)

func fleets(t *testing.T, ts *testServer) map[string]offers.FleetJSON {
	code, body := ts.api("GET", "/api/v1/fleets", nil)
	if code != 200 {
		t.Fatalf("fleets: %d %s", code, body)
	}
	var out struct{ Fleets []offers.FleetJSON }
	json.Unmarshal(body, &out)
	m := map[string]offers.FleetJSON{}
	for _, f := range out.Fleets {
		m[f.Name] = f
	}
	return m
}

func TestWavesPauseResumeAndRestart(t *testing.T) {
	est := newEstate(t)
	est.addVersion("0.149.1")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	tok := ts.createToken("edge", nil)
	type pair struct {
		col uuid.UUID
		upd *fakeUpdater
	}
	var pairs []pair
	for i, host := range []string{"a", "b", "c"} {
		col, _ := ts.startCollector(tok.Token, host, "0.149.0")
		pairs = append(pairs, pair{col, ts.startUpdater(tok.Token, col, host, "binary")})
		_ = i
	}
	a, b, c := pairs[0], pairs[1], pairs[2]
	for _, p := range pairs {
		ts.waitAgent(p.col, "linked", func(x admin.Agent) bool { return pairingOf(x)["state"] == "linked" })
	}
	est.write("inventory/waves.yaml", fmt.Sprintf("- {instanceUid: %s, labels: {wave: \"1\"}}\n- {instanceUid: %s, labels: {wave: \"2\"}}\n", a.col, b.col))
	est.fleet("edge", "0.149.1", "rollout: {waveLabel: wave, waves: [\"1\", \"2\"], maxFailures: 0}\n")
	ts.reload()

	ts.waitAgent(a.col, "wave 1 offered", offerState("offered"))
	ts.waitAgent(b.col, "wave 2 waits", offerState("waiting_wave"))
	ts.waitAgent(c.col, "no wave waits (last)", offerState("waiting_wave"))
	f := fleets(t, ts)["edge"]
	if f.Rollout.State != "running" || len(f.Rollout.Waves) != 3 || f.Rollout.Waves[0].Total != 1 || f.Rollout.Waves[1].States["waiting_wave"] != 1 {
		t.Fatalf("fleet = %+v", f)
	}
	if b.upd.offerCount() != 0 || c.upd.offerCount() != 0 {
		t.Fatal("later waves offered early")
	}

	// Wave 1 fails: with maxFailures 0 the rollout pauses instead of moving on.
	offer := a.upd.waitOffer("wave 1", func(*protobufs.PackagesAvailable) bool { return true })
	a.upd.report(offer, pkgName, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, "pre-activation check failed")
	ts.waitAgent(a.col, "failed", offerState("failed"))
	ts.waitAgent(b.col, "paused", offerState("paused"))
	f = fleets(t, ts)["edge"]
	if f.Rollout.State != "paused" || f.Rollout.Failures != 1 {
		t.Fatalf("fleet after failure = %+v", f.Rollout)
	}

	// A restart keeps the failed hash and the paused rollout.
	ts = ts.restart()
	f = fleets(t, ts)["edge"]
	if f.Rollout.State != "paused" || f.Rollout.Failures != 1 {
		t.Fatalf("fleet after restart = %+v", f.Rollout)
	}
	ag, _ := ts.agent(a.col)
	mustEqual(t, "failed offer after restart", offerOf(ag).State, "failed")

	code, body := ts.api("POST", "/api/v1/fleets/edge/resume", nil)
	if code != 200 || !strings.Contains(string(body), `"state": "running"`) {
		t.Fatalf("resume: %d %s", code, body)
	}
	if code, _ := ts.api("POST", "/api/v1/fleets/nope/resume", nil); code != http.StatusNotFound {
		t.Fatalf("resume unknown fleet: %d", code)
	}
	// Wave 1 is done (failed), so wave 2 is offered; the last group waits for wave 2.
	ts.waitAgent(b.col, "wave 2 offered after resume", offerState("offered"))
	ag, _ = ts.agent(c.col)
	mustEqual(t, "last group still waiting", offerOf(ag).State, "waiting_wave")
	ag, _ = ts.agent(a.col)
	mustEqual(t, "failed stays failed", offerOf(ag).State, "failed")
}

func TestEstateBadFleetsAndPackagesKeepPrevious(t *testing.T) {
	est := newEstate(t)
	est.addVersion("0.149.1")
	est.fleet("edge", "0.149.1", "")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	tok := ts.createToken("edge", nil)
	col, _ := ts.startCollector(tok.Token, "h1", "0.149.0")
	ts.startUpdater(tok.Token, col, "h1", "binary")
	ts.waitAgent(col, "offered", offerState("offered"))

	cases := map[string]struct {
		file, content, want string
	}{
		"bad sha256 length": {"packages/otelcol-contrib/0.150.0.yaml",
			"name: otelcol-contrib\nversion: 0.150.0\nartifacts:\n  - {os: linux, arch: amd64, url: \"https://mirror.example/x\", sha256: abc, executable: otelcol}\n", "sha256 must be 64"},
		"unknown key":         {"fleets/typo.yaml", "name: typo\npriority: 1\nselectr: {a: b}\npackage: otelcol-contrib\ntargetVersion: 0.149.1\n", "unknown field selectr"},
		"missing package":     {"fleets/nopkg.yaml", "name: nopkg\npackage: nope\ntargetVersion: 1.0.0\n", "is not in the catalog (packages/nope/)"},
		"missing version":     {"fleets/nover.yaml", "name: nover\npackage: otelcol-contrib\ntargetVersion: 9.9.9\n", "has no version 9.9.9"},
		"impossible selector": {"fleets/sel.yaml", "name: sel\nselector: {\"labels.a b\": x}\npackage: otelcol-contrib\ntargetVersion: 0.149.1\n", "can never exist"},
		"artifact hash mismatch": {"packages/otelcol-contrib/0.149.2.yaml",
			"name: otelcol-contrib\nversion: 0.149.2\nartifacts:\n  - {os: linux, arch: amd64, file: artifacts/otelcol-contrib_0.149.1_linux_amd64.tar.gz, sha256: " + strings.Repeat("0", 64) + ", executable: otelcol}\n", "not the declared"},
		"escaping path": {"packages/otelcol-contrib/0.149.3.yaml",
			"name: otelcol-contrib\nversion: 0.149.3\nartifacts:\n  - {os: linux, arch: amd64, file: ../../etc/passwd, sha256: " + strings.Repeat("0", 64) + ", executable: otelcol}\n", "inside the estate"},
		"unpinned image": {"packages/otelcol-contrib/0.149.4.yaml",
			"name: otelcol-contrib\nversion: 0.149.4\nimage: {ref: registry.example/otel:latest}\n", "pinned by digest"},
		"name mismatch": {"packages/otelcol-contrib/0.149.5.yaml",
			"name: other\nversion: 0.149.5\nimage: {ref: \"r@sha256:" + strings.Repeat("a", 64) + "\"}\n", "must equal its directory"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ts := ts.forT(t)
			est.write(tc.file, tc.content)
			defer removeFile(est.dir, tc.file)
			code, body := ts.api("POST", "/api/v1/estate/reload", nil)
			if code != http.StatusUnprocessableEntity || !strings.Contains(string(body), tc.want) || !strings.Contains(string(body), tc.file) {
				t.Fatalf("reload: %d %s (want %q)", code, body, tc.want)
			}
			ag, _ := ts.agent(col)
			mustEqual(t, "previous estate in force", offerOf(ag).State, "offered")
		})
	}
}
