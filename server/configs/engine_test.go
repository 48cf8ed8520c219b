package configs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/configrender"
	"github.com/myriarch/myriarch/server/registry"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// A collector that registers after its fleet has a configuration gets it at
// once, in the answer to its message, and goes pending → in_sync.
func TestBootstrapAppliesAndSyncs(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.clk.add(time.Minute)
	col := uuid.New()
	resp := h.connect(col, "site.type=edge", "site.id=edge-007", "labels.ignored=x")
	rc := h.delivered(t, col, resp)
	body := rc.GetConfig().GetConfigMap()[""]
	if body.GetContentType() != "text/yaml" || !strings.Contains(string(body.GetBody()), "/var/lib/otelcol/edge-007.json") {
		t.Fatalf("config sent: %q %q", body.GetContentType(), body.GetBody())
	}
	hash := hex.EncodeToString(rc.ConfigHash)
	if hash != sha(body.GetBody()) {
		t.Fatalf("config_hash %s is not the SHA-256 of the body", hash)
	}
	r := h.rec(col)
	if r.assigned != hash || r.desired != hash || r.syncState() != SyncPending {
		t.Fatalf("assigned %s desired %s sync %s", r.assigned, r.desired, r.syncState())
	}
	if again := h.message(col, heartbeat(), false); again.RemoteConfig != nil {
		t.Fatal("the config was sent again before the resend interval")
	}
	h.status(col, hash, applying, "")
	if s := h.rec(col).syncState(); s != SyncPending {
		t.Fatalf("applying: %s", s)
	}
	h.status(col, hash, applied, "")
	if s := h.rec(col).syncState(); s != SyncInSync {
		t.Fatalf("applied: %s", s)
	}
	if r := h.rec(col); r.applied != hash {
		t.Fatalf("applied hash %q", r.applied)
	}
	evs := h.events(col)
	for _, want := range []string{"config_assigned", "config_desired", "config_sent", "config_applied"} {
		if !slices.Contains(evs, want) {
			t.Errorf("events %v lack %s", evs, want)
		}
	}
}

// Collectors with the same context share one stored body.
func TestIdenticalRendersShareABody(t *testing.T) {
	h := newHarness(t)
	h.start()
	var uids []uuid.UUID
	for i := range 5 {
		u := uuid.New()
		site := "edge-001"
		if i == 4 {
			site = "edge-002"
		}
		h.connect(u, "site.type=edge", "site.id="+site, "host.name=h"+string(rune('a'+i)))
		uids = append(uids, u)
	}
	h.e.mu.Lock()
	n := len(h.e.bodies)
	h.e.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d bodies stored for two distinct contexts", n)
	}
	if h.rec(uids[0]).assigned != h.rec(uids[3]).assigned || h.rec(uids[0]).assigned == h.rec(uids[4]).assigned {
		t.Fatal("hashes do not follow the contexts")
	}
}

// Agents that existed before the fleet had a configuration move through
// the waves: wave 2 gets it when every agent of wave 1 is in sync or failed.
func TestWavesGateDesired(t *testing.T) {
	h := newHarness(t)
	w1a, w1b, w2 := uuid.New(), uuid.New(), uuid.New()
	h.connect(w1a, "site.type=edge", "site.id=a")
	h.connect(w1b, "site.type=edge", "site.id=b")
	h.connect(w2, "site.type=edge", "site.id=c")
	label(t, h, w1a, "1")
	label(t, h, w1b, "1")
	label(t, h, w2, "2")
	h.start()
	if r := h.rec(w2); r.desired != "" || r.syncState() != SyncDrift {
		t.Fatalf("wave 2 before wave 1 finished: desired %q sync %s", r.desired, r.syncState())
	}
	a, b := h.rec(w1a), h.rec(w1b)
	if a.desired == "" || b.desired == "" {
		t.Fatal("wave 1 not offered")
	}
	h.status(w1a, a.desired, applied, "")
	if h.rec(w2).desired != "" {
		t.Fatal("wave 2 offered with one agent of wave 1 still pending")
	}
	h.status(w1b, b.desired, failedSt, "exporter broke")
	if r := h.rec(w2); r.desired != r.assigned {
		t.Fatalf("wave 2 not offered after wave 1 ended: desired %q", r.desired)
	}
	if got := h.snd.waitSent(t, w2, h.rec(w2).assigned); got != h.rec(w2).assigned {
		t.Fatalf("wave 2 agent sent %q", got)
	}
}

// FAILED for the desired hash: it is failed, never offered again, and
// desired rolls back to the last applied hash, which is sent again. Retry
// offers it again.
func TestFailureRollsBackAndRetryOffersAgain(t *testing.T) {
	h, col := startedWithEdgeCollector(t)
	good := h.rec(col).desired
	h.status(col, good, applied, "")

	h.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(gatewayBlueprint, "type: file", "type: nosuch", 1))
	h.reload()
	bad := h.rec(col).assigned
	if bad == good || h.rec(col).desired != bad {
		t.Fatalf("new revision not offered: assigned %s desired %s", bad, h.rec(col).desired)
	}
	if got := h.snd.waitSent(t, col, bad); got != bad {
		t.Fatalf("sent %s, want the new hash", got)
	}
	resp := h.status(col, bad, failedSt, "unknown type: \"nosuch\"")
	r := h.rec(col)
	// Rolled back to the last applied configuration: drift, the
	// failure kept in the failed hash and its reason.
	if r.desired != good || r.failedHash() != bad || r.syncState() != SyncDrift || r.failedWhy != `unknown type: "nosuch"` {
		t.Fatalf("after FAILED: desired %s failed %s sync %s why %q", short(r.desired), short(r.failedHash()), r.syncState(), r.failedWhy)
	}
	if resp.RemoteConfig == nil || hex.EncodeToString(resp.RemoteConfig.ConfigHash) != good {
		// The WebSocket sender may have sent it first.
		if h.snd.waitSent(t, col, good) != good {
			t.Fatal("the last applied configuration was not sent back")
		}
	}
	if !slices.Contains(h.events(col), "config_rolled_back") {
		t.Fatalf("events %v", h.events(col))
	}
	h.status(col, good, applied, "")
	if r := h.rec(col); r.syncState() != SyncDrift || r.waveState() != waveRolledBack || r.failedHash() != bad {
		t.Fatalf("back on the good config: %s (waves: %s), failed %s", r.syncState(), r.waveState(), short(r.failedHash()))
	}
	// Nothing offers the failed hash again by itself.
	h.clk.add(time.Hour)
	if resp := h.message(col, heartbeat(), false); resp.RemoteConfig != nil {
		t.Fatal("something was offered again automatically")
	}
	if err := h.e.Retry(col); err != nil {
		t.Fatal(err)
	}
	if r := h.rec(col); r.desired != bad || r.syncState() != SyncPending || r.failedWhy != "" {
		t.Fatalf("after retry: desired %s sync %s why %q", short(r.desired), r.syncState(), r.failedWhy)
	}
	h.status(col, bad, failedSt, "unknown type: \"nosuch\"")
	if r := h.rec(col); r.desired != good || !r.isFailed(bad) {
		t.Fatalf("failing again after retry: desired %s", short(r.desired))
	}
}

// More failures than maxFailures pause the fleet's config rollout.
func TestFailuresPauseTheRollout(t *testing.T) {
	h := newHarness(t)
	var uids []uuid.UUID
	for i := range 4 {
		u := uuid.New()
		h.connect(u, "site.type=edge", "site.id=s"+string(rune('0'+i)))
		uids = append(uids, u)
	}
	h.start()
	// All in the no-wave group, which is the last: waves 1 and 2 are empty, so it is open.
	for _, u := range uids[:2] {
		h.status(u, h.rec(u).desired, failedSt, "bad")
	}
	h.e.mu.Lock()
	paused := h.e.fleets["edge"].Paused
	h.e.mu.Unlock()
	if !paused {
		t.Fatal("two failures with maxFailures 1 did not pause")
	}
}

// A render error keeps the previous assigned hash and names the problem.
func TestRenderErrorKeepsAssigned(t *testing.T) {
	h := newHarness(t)
	h.start()
	col := uuid.New()
	h.connect(col, "site.type=edge", "site.id=s1")
	before := h.rec(col).assigned
	h.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(gatewayBlueprint, "${site.id}", "${site.missing}", 1))
	h.reload()
	r := h.rec(col)
	if r.assigned != before || r.syncState() == SyncNone {
		t.Fatalf("assigned %s (was %s), sync %s", short(r.assigned), short(before), r.syncState())
	}
	if !strings.Contains(r.err, "data-flow/gw") || !strings.Contains(r.err, "site.missing") {
		t.Fatalf("error %q does not name the Blueprint and the variable", r.err)
	}
	if !slices.Contains(h.events(col), "config_render_error") {
		t.Fatalf("events %v", h.events(col))
	}
}

// Odd reports change nothing but what the agent said.
func TestOddReports(t *testing.T) {
	h, col := startedWithEdgeCollector(t)
	want := h.rec(col)

	h.status(col, strings.Repeat("ab", 32), applied, "")
	r := h.rec(col)
	if r.desired != want.desired || r.applied != "" || r.syncState() != SyncPending {
		t.Fatalf("unknown hash: desired %s applied %q sync %s", short(r.desired), r.applied, r.syncState())
	}
	if len(h.eventMessages(col, "config_unknown_hash")) != 1 {
		t.Fatalf("events %v", h.events(col))
	}
	h.status(col, "", applied, "")
	if r := h.rec(col); r.reported.Hash != strings.Repeat("ab", 32) {
		t.Fatalf("a status without a hash changed the report: %+v", r.reported)
	}
	if len(h.eventMessages(col, "config_status_ignored")) != 1 {
		t.Fatalf("events %v", h.events(col))
	}
}

// An agent that reports APPLIED for an older hash is pending until it runs
// the desired one, and gets the desired one again after the resend interval.
func TestAppliedOldHash(t *testing.T) {
	h, col := startedWithEdgeCollector(t)
	first := h.rec(col).desired
	h.status(col, first, applied, "")
	h.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(gatewayBlueprint, "/var/lib/otelcol/", "/srv/", 1))
	h.reload()
	second := h.rec(col).desired
	if got := h.snd.waitSent(t, col, second); got != second {
		t.Fatalf("the new revision was not sent: %s", got)
	}
	h.status(col, first, applied, "")
	if r := h.rec(col); r.syncState() != SyncPending || r.desired != second {
		t.Fatalf("sync %s desired %s", r.syncState(), short(r.desired))
	}
	h.clk.add(31 * time.Second)
	resp := h.message(col, heartbeat(), false)
	if resp.RemoteConfig == nil || hex.EncodeToString(resp.RemoteConfig.ConfigHash) != second {
		t.Fatal("desired not sent again after the resend interval")
	}
}

// A Bridge gets no configuration unless its fleet opts in.
func TestBridgeNeedsOptIn(t *testing.T) {
	h := newHarness(t)
	h.start()
	br := uuid.New()
	h.connect(br, "site.type=edge", "site.id=s1", "opentelemetry.io/opamp.bridge.mode=operator")
	r := h.rec(br)
	if r.assigned != "" || r.syncState() != SyncNone || !strings.Contains(r.err, "config.bridges") {
		t.Fatalf("bridge: assigned %q sync %s err %q", r.assigned, r.syncState(), r.err)
	}
	h.write("fleets/edge.yaml", strings.Replace(edgeFleet, "  blueprint: data-flow/gw\n", "  blueprint: data-flow/gw\n  bridges: true\n", 1))
	h.reload()
	if r := h.rec(br); r.assigned == "" || r.err != "" {
		t.Fatalf("opted-in bridge: assigned %q err %q", r.assigned, r.err)
	}
}

// Assignments survive a restart without rewriting unchanged rows; a new
// revision that leaves a Blueprint's render alone writes nothing.
func TestRestartAndUnchangedRevision(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.clk.add(time.Minute)
	var uids []uuid.UUID
	for i := range 20 {
		u := uuid.New()
		h.connect(u, "site.type=edge", "site.id=s"+string(rune('a'+i)))
		uids = append(uids, u)
	}
	h.status(uids[0], h.rec(uids[0]).desired, applied, "")
	want := h.rec(uids[0])
	h.restart()
	if got := h.db.rows.Load(); got != 0 {
		t.Fatalf("start-up wrote %d assignment rows", got)
	}
	got := h.rec(uids[0])
	if got.assigned != want.assigned || got.desired != want.desired || got.applied != want.applied || got.syncState() != SyncInSync {
		t.Fatalf("after restart %+v, want %+v", got.persisted(), want.persisted())
	}
	h.write("teams/data-flow/components/spare.yaml", "name: spare\nclass: exporter\ntype: debug\nversion: 1\nowner: data-flow-owners\n")
	h.reload()
	h.e.flush()
	if got := h.db.rows.Load(); got != 0 {
		t.Fatalf("an unrelated change wrote %d assignment rows", got)
	}
}

// label gives uid the server label wave (as the inventory would).
func label(t *testing.T, h *harness, uid uuid.UUID, wave string) {
	t.Helper()
	h.mu.Lock()
	if h.labels == nil {
		h.labels = map[uuid.UUID]map[string]string{}
	}
	h.labels[uid] = map[string]string{"wave": wave}
	inv := registry.Inventory{ByUID: map[uuid.UUID]map[string]string{}, ByToken: map[string]map[string]string{}}
	for u, l := range h.labels {
		inv.ByUID[u] = l
	}
	h.mu.Unlock()
	h.reg.SetInventory(inv)
}

func heartbeat() *protobufs.AgentToServer { return &protobufs.AgentToServer{} }

// An agent that ran the desired configuration and reports it no longer
// does is sent it again at once, not after the resend interval.
func TestLostConfigIsSentAgain(t *testing.T) {
	h, col := startedWithEdgeCollector(t)
	want := h.rec(col).desired
	h.snd.waitSent(t, col, want)
	h.status(col, want, applied, "")
	resp := h.status(col, "", protobufs.RemoteConfigStatuses_RemoteConfigStatuses_UNSET, "")
	if rc := resp.GetRemoteConfig(); rc == nil || hex.EncodeToString(rc.ConfigHash) != want {
		if h.snd.n.Load() < 2 {
			t.Fatal("the lost configuration was not sent again")
		}
	}
}

// A fleet whose Blueprint references a Component that does not exist
// keeps the collectors' assigned configuration and names the problem.
func TestMissingComponentIsARenderError(t *testing.T) {
	h := newHarness(t)
	h.start()
	col := uuid.New()
	h.connect(col, "site.type=edge", "site.id=s1")
	before := h.rec(col).assigned
	h.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(gatewayBlueprint,
		"    - component: batch\n", "    - component: batch\n    - component: infosec/redact@2\n", 1))
	h.reload()
	r := h.rec(col)
	if r.assigned != before || !strings.Contains(r.err, "data-flow/gw") || !strings.Contains(r.err, "infosec/redact") {
		t.Fatalf("assigned %s (was %s), error %q", short(r.assigned), short(before), r.err)
	}
	// Every collector of the fleet gets the same error without a render each.
	h.e.mu.Lock()
	n := len(h.e.bodies)
	h.e.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d bodies", n)
	}
}

// A collector stuck APPLYING its desired configuration while unhealthy
// (a Supervisor restarted with a rejected configuration cached never
// reports FAILED) has that configuration failed and rolled back.
func TestStuckApplyingFails(t *testing.T) {
	h, col := startedWithEdgeCollector(t)
	good := h.rec(col).desired
	h.status(col, good, applied, "")
	h.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(gatewayBlueprint, "type: file", "type: nosuch", 1))
	h.reload()
	bad := h.rec(col).desired
	h.status(col, bad, applying, "")
	unhealthy := &protobufs.AgentToServer{Health: &protobufs.ComponentHealth{Healthy: false, LastError: "Agent process PID=1 exited unexpectedly"}}
	h.message(col, unhealthy, false)
	h.clk.add(10 * time.Second)
	h.message(col, heartbeat(), false)
	if r := h.rec(col); r.desired != bad || r.isFailed(bad) {
		t.Fatal("failed before StuckAfter")
	}
	h.clk.add(25 * time.Second)
	h.message(col, heartbeat(), false)
	r := h.rec(col)
	if !r.isFailed(bad) || r.desired != good || r.syncState() != SyncDrift || !strings.HasPrefix(r.failedWhy, "no FAILED report; the collector has been unhealthy") {
		t.Fatalf("stuck: desired %s failed %v sync %s why %q", short(r.desired), r.failed, r.syncState(), r.failedWhy)
	}
	msgs := h.eventMessages(col, "config_failed")
	if len(msgs) != 1 || !strings.Contains(msgs[0], "unhealthy") || !strings.Contains(msgs[0], "exited unexpectedly") {
		t.Fatalf("config_failed events %q", msgs)
	}
	// Healthy while applying is just slow: nothing fails.
	h2 := newHarness(t)
	h2.start()
	h2.clk.add(time.Minute)
	c2 := uuid.New()
	h2.connect(c2, "site.type=edge", "site.id=s1")
	d := h2.rec(c2).desired
	h2.message(c2, &protobufs.AgentToServer{Health: &protobufs.ComponentHealth{Healthy: true}}, false)
	h2.status(c2, d, applying, "")
	h2.clk.add(time.Hour)
	h2.message(c2, heartbeat(), false)
	if h2.rec(c2).isFailed(d) {
		t.Fatal("a healthy agent applying slowly was failed")
	}
}

// APPLIED while the collector's effective configuration lacks the desired
// components is not in sync: the configuration is sent again, once at
// once; an effective configuration that has them makes it in sync.
func TestAppliedButNotEffective(t *testing.T) {
	h, col := startedWithEdgeCollector(t)
	want := h.rec(col).desired
	h.snd.waitSent(t, col, want)
	effective := func(body string) *protobufs.AgentToServer {
		return &protobufs.AgentToServer{EffectiveConfig: &protobufs.EffectiveConfig{ConfigMap: &protobufs.AgentConfigMap{
			ConfigMap: map[string]*protobufs.AgentConfigFile{"": {Body: []byte(body)}}}}}
	}
	h.message(col, effective("extensions:\n  opamp: {}\nservice:\n  extensions: [opamp]\n"), false)
	resp := h.status(col, want, applied, "")
	if r := h.rec(col); r.syncState() != SyncPending {
		t.Fatalf("sync %s with the components missing", r.syncState())
	}
	if rc := resp.GetRemoteConfig(); rc == nil || hex.EncodeToString(rc.ConfigHash) != want {
		t.Fatal("not sent again at once")
	}
	if m := h.eventMessages(col, "config_not_effective"); len(m) != 1 || !strings.Contains(m[0], "exporters/file/out") {
		t.Fatalf("events %q", m)
	}
	if resp := h.status(col, want, applied, ""); resp.GetRemoteConfig() != nil {
		t.Fatal("sent again before the resend interval")
	}
	h.message(col, effective(strings.Replace(h.body(want), "extensions: {}", "extensions:\n  opamp: {}", 1)), false)
	if r := h.rec(col); r.syncState() != SyncInSync {
		t.Fatalf("sync %s with every component effective", r.syncState())
	}
}

// An agent the registry prunes is forgotten by the engine too.
func TestPrunedAgentIsForgotten(t *testing.T) {
	h := newHarness(t)
	h.start()
	col := uuid.New()
	h.connect(col, "site.type=edge", "site.id=s1")
	h.rec(col)
	h.reg.Disconnected(col)
	h.clk.add(31 * 24 * time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.e.mu.Lock()
		_, ok := h.e.records[col]
		h.e.mu.Unlock()
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pruned agent's record stays")
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.e.mu.Lock()
	defer h.e.mu.Unlock()
	for _, f := range h.e.fleets {
		if f.waves.Has(col) {
			t.Fatal("the pruned agent is still counted in a wave")
		}
	}
}

// What is followed of an agent applying a configuration is held only while
// there is something to follow: not for agents in sync and healthy (most
// of an estate), again not once an apply finished and health returned.
func TestTrackingHeldWhileApplying(t *testing.T) {
	h, col := startedWithEdgeCollector(t)
	if h.rec(col).tr != nil {
		t.Fatal("tracking held for an agent that reported nothing")
	}
	want := h.rec(col).desired
	h.status(col, want, applying, "")
	if tr := h.rec(col).tr; tr == nil || tr.applyingSince.IsZero() {
		t.Fatal("applying not followed")
	}
	h.message(col, &protobufs.AgentToServer{Health: &protobufs.ComponentHealth{Healthy: false, LastError: "restarting"}}, false)
	if tr := h.rec(col).tr; tr == nil || tr.unhealthySince.IsZero() || tr.healthErr != "restarting" {
		t.Fatal("health not followed while applying")
	}
	h.message(col, &protobufs.AgentToServer{Health: &protobufs.ComponentHealth{Healthy: true}}, false)
	h.status(col, want, applied, "")
	if r := h.rec(col); r.tr != nil || r.syncState() != SyncInSync {
		t.Fatalf("tracking %+v held after the apply (sync %s)", r.tr, r.syncState())
	}
}

// A collector's render is made without the Engine's lock: while one is
// held up (a host context that renders slowly, say), every other
// collector is assigned, sent and answered.
func TestRenderOutsideTheLock(t *testing.T) {
	h := newHarness(t)
	h.start()
	slow, other := uuid.New(), uuid.New()
	entered, release := make(chan struct{}), make(chan struct{})
	testHookRender = func(in configrender.Input) {
		if in.Context["site.id"] == "slow" {
			close(entered)
			<-release
		}
	}
	t.Cleanup(func() { testHookRender = nil })
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.connect(slow, "site.type=edge", "site.id=slow")
	}()
	<-entered
	answered := make(chan *protobufs.ServerToAgent, 1)
	go func() { answered <- h.connect(other, "site.type=edge", "site.id=s2") }()
	select {
	case resp := <-answered:
		if rc := h.delivered(t, other, resp); rc == nil || !strings.Contains(h.body(hex.EncodeToString(rc.ConfigHash)), "s2.json") {
			t.Fatalf("the other collector's configuration: %v", rc)
		}
		if r := h.rec(other); r.assigned == "" || r.syncState() != SyncPending {
			t.Fatalf("other: assigned %q, %s", r.assigned, r.syncState())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the other collector was not answered while one render was held up")
	}
	close(release)
	<-done
	if r := h.rec(slow); r.assigned == "" {
		t.Fatalf("the slow collector was not assigned once its render ended: %+v", r)
	}
}

// A FAILED report for the desired configuration with nothing applied to
// go back to is "failed", with the agent's reason, until it is retried.
func TestFailedWithoutRollback(t *testing.T) {
	h := newHarness(t)
	h.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(gatewayBlueprint, "type: file", "type: nosuch", 1))
	h.start()
	h.clk.add(time.Minute)
	col := uuid.New()
	h.connect(col, "site.type=edge", "site.id=s1")
	bad := h.rec(col).desired
	h.status(col, bad, failedSt, "unknown type: \"nosuch\"")
	if r := h.rec(col); r.desired != bad || r.syncState() != SyncFailed || r.failedWhy != `unknown type: "nosuch"` {
		t.Fatalf("desired %s sync %s why %q", short(r.desired), r.syncState(), r.failedWhy)
	}
	// The agent restarts and reports nothing: the failure stands.
	h.status(col, "", protobufs.RemoteConfigStatuses_RemoteConfigStatuses_UNSET, "")
	if s := h.rec(col).syncState(); s != SyncFailed {
		t.Fatalf("after an empty report: %s", s)
	}
}

// The Supervisor reports FAILED "Agent exited unexpectedly with exit code
// N while applying configuration" for an exit the configuration did not
// cause too (its updater stopping it; the late exit of the collector it
// stopped itself). Exit codes 0 and -1 are judged by the collector's
// health: sent again once healthy, failed when unhealthy for StuckAfter;
// a code of the collector's own fails at once.
func TestInterruptedApplyIsJudgedByHealth(t *testing.T) {
	const exited = "Agent exited unexpectedly with exit code %s while applying configuration"
	unhealthy := &protobufs.AgentToServer{Health: &protobufs.ComponentHealth{Healthy: false, LastError: "Agent process PID=7 exited unexpectedly, exit code=-1. Will restart in a bit..."}}
	healthy := &protobufs.AgentToServer{Health: &protobufs.ComponentHealth{Healthy: true}}
	for _, tc := range []struct {
		code        string
		recovers    bool // healthy again after the exit
		failsAtOnce bool
	}{
		{code: "-1", recovers: true},
		{code: "0", recovers: true},
		{code: "-1", recovers: false},
		{code: "0", recovers: false},
		{code: "1", failsAtOnce: true},
		{code: "2", failsAtOnce: true},
	} {
		t.Run(fmt.Sprintf("exit %s recovers %v", tc.code, tc.recovers), func(t *testing.T) {
			h, col := startedWithEdgeCollector(t)
			d := h.rec(col).desired
			h.message(col, unhealthy, false)
			sentBefore := len(h.eventMessages(col, "config_sent"))
			resp := h.status(col, d, failedSt, fmt.Sprintf(exited, tc.code))
			r := h.rec(col)
			if tc.failsAtOnce {
				if !r.isFailed(d) || r.syncState() == SyncPending {
					t.Fatalf("exit %s: failed %v sync %s", tc.code, r.failed, r.syncState())
				}
				return
			}
			if r.isFailed(d) || r.syncState() != SyncPending || r.desired != d {
				t.Fatalf("judged at once: failed %v sync %s", r.failed, r.syncState())
			}
			if m := h.eventMessages(col, "config_apply_interrupted"); len(m) != 1 || !strings.Contains(m[0], "exit code "+tc.code) {
				t.Fatalf("events %q", m)
			}
			if resp.GetRemoteConfig() != nil || len(h.eventMessages(col, "config_sent")) != sentBefore {
				t.Fatal("sent again while the collector is unhealthy")
			}
			// The same report again (a reconnect) changes nothing.
			h.status(col, d, failedSt, fmt.Sprintf(exited, tc.code))
			if m := h.eventMessages(col, "config_apply_interrupted"); len(m) != 1 {
				t.Fatalf("the same report twice gave %d events", len(m))
			}
			if tc.recovers {
				h.clk.add(5 * time.Second)
				resp := h.message(col, healthy, false)
				if rc := resp.GetRemoteConfig(); rc == nil || hex.EncodeToString(rc.ConfigHash) != d {
					if h.snd.waitSent(t, col, d) != d || len(h.eventMessages(col, "config_sent")) == sentBefore {
						t.Fatal("not sent again once healthy")
					}
				}
				// Unchanged for the Supervisor: it answers APPLIED.
				h.status(col, d, applied, "")
				h.clk.add(time.Hour)
				h.message(col, heartbeat(), false)
				if r := h.rec(col); r.isFailed(d) || r.syncState() != SyncInSync {
					t.Fatalf("after recovery: failed %v sync %s", r.failed, r.syncState())
				}
				fleet := h.rec(col).fleet
				h.e.mu.Lock()
				spent := 0
				if f := h.e.fleets[fleet]; f != nil {
					spent = f.Spent()
				}
				h.e.mu.Unlock()
				if spent != 0 {
					t.Fatalf("the failure budget spent %d", spent)
				}
				return
			}
			h.clk.add(10 * time.Second)
			h.message(col, heartbeat(), false)
			if h.rec(col).isFailed(d) {
				t.Fatal("failed before StuckAfter")
			}
			h.clk.add(25 * time.Second)
			h.message(col, heartbeat(), false)
			r = h.rec(col)
			if !r.isFailed(d) || !strings.Contains(r.failedWhy, "exit code "+tc.code) || !strings.Contains(r.failedWhy, "unhealthy for") {
				t.Fatalf("still unhealthy: failed %v why %q", r.failed, r.failedWhy)
			}
		})
	}
}
