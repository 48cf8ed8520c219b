package configs

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/myriarch/myriarch/server/rollout"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// startFollowing starts h's engine as an instance that does not lead.
func (h *harness) startFollowing() {
	h.t.Helper()
	h.clk.add(time.Minute)
	e, err := New(context.Background(), h.reg, h.db, h.snd, slog.New(slog.DiscardHandler),
		Options{Now: h.clk.now, Estate: h.estate(), FlushEvery: time.Hour, Shared: true})
	if err != nil {
		h.t.Fatal(err)
	}
	h.e = e
	h.t.Cleanup(h.stop)
}

// share hands what the leader wrote to the follower, as the store and its
// notifications do between instances.
func share(t *testing.T, leader, follower *harness) {
	t.Helper()
	leader.e.Flush()
	assignments, bodies, err := leader.db.LoadConfigs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if missing := follower.e.Merge(assignments); len(missing) > 0 {
		follower.e.AddBodies(bodies)
	}
}

// report hands what the follower's agents reported to the leader.
func report(t *testing.T, follower, leader *harness) {
	t.Helper()
	if err := follower.reg.Flush(); err != nil {
		t.Fatal(err)
	}
	reps, err := follower.db.LoadReports(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	leader.e.ApplyReports(reps)
}

// An instance that does not lead renders nothing and writes no decision:
// it sends the leader's desired configuration to the collector connected
// to it, never sends again one the collector reported FAILED (before and
// after the leader records it failed), and reports what the collector said
// for the leader, which counts the failure once; an operator's retry on
// the leader lets the follower send it again.
func TestFollowerSendsTheLeadersConfigAndReportsBack(t *testing.T) {
	leader, follower := newHarness(t), newHarness(t)
	leader.start()
	follower.startFollowing()
	col := uuid.New()
	attrs := []string{"site.type=edge", "site.id=par-01", "wave=1"}
	leader.connect(col, attrs...) // as the leader learns it from the store
	if resp := follower.connect(col, attrs...); resp.GetRemoteConfig() != nil {
		t.Fatal("a follower sent a configuration it decided itself")
	}
	desired := leader.rec(col).desired
	if desired == "" {
		t.Fatal("the leader assigned nothing")
	}
	share(t, leader, follower)
	if got := follower.snd.waitSent(t, col, desired); got != desired {
		t.Fatalf("the follower sent %q, want the leader's %q", got, desired)
	}
	sent := follower.snd.n.Load()
	if resp := follower.status(col, desired, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED, "unknown type"); resp.GetRemoteConfig() != nil {
		t.Fatal("the follower answered a FAILED status with the failed configuration")
	}
	report(t, follower, leader)
	if r := leader.rec(col); !r.isFailed(desired) || r.syncState() != SyncFailed {
		t.Fatalf("the leader did not apply the failure: failed %v, sync %s", r.failed, r.syncState())
	}
	report(t, follower, leader) // read again (a takeover reads every report)
	leader.e.mu.Lock()
	failures := leader.e.fleets["edge"].Failures
	leader.e.mu.Unlock()
	if failures != 1 {
		t.Fatalf("the fleet counts %d failures, want 1", failures)
	}
	share(t, leader, follower)
	follower.message(col, &protobufs.AgentToServer{}, false)
	time.Sleep(50 * time.Millisecond)
	if n := follower.snd.n.Load(); n != sent {
		t.Fatalf("the follower sent the failed configuration again (%d sends, want %d)", n, sent)
	}
	if rows := follower.db.rows.Load(); rows != 0 {
		t.Fatalf("a follower wrote %d assignment rows", rows)
	}
	if err := leader.e.Retry(col); err != nil {
		t.Fatal(err)
	}
	share(t, leader, follower)
	waitSends(t, follower.snd, sent+1)
}

func waitSends(t *testing.T, s *sender, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.n.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d sends, want %d", s.n.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A follower that learns of a fleet after the leader wrote its rollout
// state (its estate reloaded later than the leader's) shows that state,
// not a rollout starting from nothing.
func TestFollowerTakesTheStateOfAFleetNewToIt(t *testing.T) {
	h := newHarness(t)
	fleetFile := filepath.Join(h.dir, "fleets", "edge.yaml")
	if err := os.Remove(fleetFile); err != nil {
		t.Fatal(err)
	}
	h.startFollowing()
	if err := h.db.PutState(context.Background(), rolloutKey+"edge", []byte(`{"digest":"d1","paused":true,"failures":2}`)); err != nil {
		t.Fatal(err)
	}
	// The leader's notification of it reaches the follower first.
	if err := h.e.ReloadState(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.write("fleets/edge.yaml", edgeFleet)
	h.reload()
	got, _ := h.e.FleetJSON("edge").(RolloutJSON)
	if got.State != rollout.Paused || got.PausedBy != rollout.ByFailures || got.Failures != 2 {
		t.Fatalf("the follower shows %+v, want the leader's rollout paused after 2 failures", got.Summary)
	}
}

// An interrupted apply (the Supervisor's FAILED for an exit code 0 or -1)
// reported to a follower is judged where the collector is connected: sent
// again by the follower once the collector is healthy, never counted as a
// failure by the leader; one whose collector stays unhealthy is reported
// stuck and failed by the leader.
func TestFollowerJudgesAnInterruptedApply(t *testing.T) {
	const exited = "Agent exited unexpectedly with exit code -1 while applying configuration"
	for _, recovers := range []bool{true, false} {
		leader, follower := newHarness(t), newHarness(t)
		leader.start()
		follower.startFollowing()
		col := uuid.New()
		attrs := []string{"site.type=edge", "site.id=par-01", "wave=1"}
		leader.connect(col, attrs...)
		follower.connect(col, attrs...)
		desired := leader.rec(col).desired
		share(t, leader, follower)
		follower.snd.waitSent(t, col, desired)
		sent := follower.snd.n.Load()
		follower.message(col, &protobufs.AgentToServer{Health: &protobufs.ComponentHealth{Healthy: false, LastError: "exited"}}, false)
		if resp := follower.status(col, desired, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED, exited); resp.GetRemoteConfig() != nil {
			t.Fatal("sent again while the collector is unhealthy")
		}
		report(t, follower, leader)
		if r := leader.rec(col); r.isFailed(desired) || r.syncState() != SyncPending {
			t.Fatalf("the leader judged at once: failed %v sync %s", r.failed, r.syncState())
		}
		if !recovers {
			follower.clk.add(time.Minute)
			follower.message(col, &protobufs.AgentToServer{}, false)
			report(t, follower, leader)
			if r := leader.rec(col); !r.isFailed(desired) || r.failedWhy == "" {
				t.Fatalf("unhealthy for a minute: failed %v why %q", r.failed, r.failedWhy)
			}
			continue
		}
		resp := follower.message(col, &protobufs.AgentToServer{Health: &protobufs.ComponentHealth{Healthy: true}}, false)
		if resp.GetRemoteConfig() == nil {
			waitSends(t, follower.snd, sent+1)
		}
		follower.status(col, desired, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, "")
		report(t, follower, leader)
		if r := leader.rec(col); r.isFailed(desired) || r.syncState() != SyncInSync {
			t.Fatalf("recovered: failed %v sync %s", r.failed, r.syncState())
		}
		if m := leader.eventMessages(col, "config_apply_interrupted"); len(m) != 1 {
			t.Fatalf("leader events %q", m)
		}
	}
}
