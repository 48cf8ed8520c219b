package configs

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// An operator's pause holds the configuration rollout of a fleet (a new
// revision does not become desired) until resume; the fleet shows who
// paused it.
func TestOperatorPauseHoldsTheConfigRollout(t *testing.T) {
	h, col := startedWithEdgeCollector(t)
	good := h.rec(col).desired
	h.status(col, good, applied, "")

	if h.e.PauseFleet("nope") {
		t.Fatal("paused a fleet without a configuration")
	}
	if !h.e.PauseFleet("edge") {
		t.Fatal("pause refused")
	}
	if fj := h.e.FleetJSON("edge").(RolloutJSON); fj.State != "paused" || fj.PausedBy != "operator" {
		t.Fatalf("fleet %+v", fj)
	}
	h.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(gatewayBlueprint, "4318", "4319", 1))
	h.reload()
	if r := h.rec(col); r.assigned == good || r.desired != good || r.syncState() != SyncDrift {
		t.Fatalf("while paused: assigned %s desired %s sync %s", short(r.assigned), short(r.desired), r.syncState())
	}
	if !h.e.ResumeFleet("edge") {
		t.Fatal("resume refused")
	}
	if r := h.rec(col); r.desired != r.assigned {
		t.Fatalf("after resume: desired %s assigned %s", short(r.desired), short(r.assigned))
	}
	if fj := h.e.FleetJSON("edge").(RolloutJSON); fj.State == "paused" || fj.PausedBy != "" {
		t.Fatalf("fleet after resume %+v", fj)
	}
}

// A fleet-wide retry clears the failed configurations of its members only,
// and the counts by sync state follow.
func TestRetryFleetAndSyncCounts(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.clk.add(time.Minute)
	a, b := uuid.New(), uuid.New()
	h.connect(a, "site.type=edge", "site.id=a")
	h.connect(b, "site.type=edge", "site.id=b")
	h.status(a, h.rec(a).desired, applied, "")
	h.status(b, h.rec(b).desired, failedSt, "exporter broke")
	if c := h.e.SyncCounts(); c[SyncFailed] != 1 || c[SyncInSync] != 1 {
		t.Fatalf("counts %v", c)
	}
	if _, err := h.e.RetryFleet("nope"); err == nil {
		t.Fatal("retried a fleet that does not exist")
	}
	n, err := h.e.RetryFleet("edge")
	if err != nil || n != 1 {
		t.Fatalf("RetryFleet = %d, %v; want 1", n, err)
	}
	r := h.rec(b)
	if len(r.failed) != 0 || !slices.Contains(h.events(b), "config_retry") || slices.Contains(h.events(a), "config_retry") {
		t.Fatalf("after retry: failed %v, events of b %v, of a %v", r.failed, h.events(b), h.events(a))
	}
	if got := h.snd.waitSent(t, b, r.desired); got != r.desired {
		t.Fatalf("the retried configuration was not sent again: %q", got)
	}
	h.status(b, r.desired, applied, "")
	if c := h.e.SyncCounts(); c[SyncFailed] != 0 || c[SyncInSync] != 2 {
		t.Fatalf("counts after retry %v", c)
	}
}
