package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/cluster"
	"github.com/myriarch/myriarch/server/configs"
	"github.com/myriarch/myriarch/server/store/postgres"
)

// sharing is n instances on one private PostgreSQL with one estate (each
// reloading it when its revision changes), a 1 s heartbeat, and a token
// every instance knows.
type sharing struct {
	t     *testing.T
	pg    *testenv.Cluster
	est   *testEstate
	ins   []*testServer
	token string
}

func startSharing(t *testing.T, n int, est *testEstate) *sharing {
	t.Helper()
	sh := &sharing{t: t, pg: testenv.StartCluster(t), est: est}
	for range n {
		sh.ins = append(sh.ins, sh.start())
	}
	tok := sh.ins[0].createToken("edge", nil)
	for _, ts := range sh.ins {
		testkit.WaitFor(t, "the token known to every instance", func() bool { return ts.Tokens().TokenName(tok.ID) != "" })
	}
	sh.token = tok.Token
	return sh
}

func (sh *sharing) start() *testServer {
	return startServer(sh.t, func(o *server.Options) {
		o.Store, o.Estate, o.EstatePoll, o.Heartbeat = sh.pg.DSN("postgres"), sh.est.dir, 50*time.Millisecond, time.Second
		o.NotificationWindow = 200 * time.Millisecond
		*o = server.WithNotifyBackoff(*o, 300*time.Millisecond)
	})
}

func clusterStatus(t *testing.T, ts *testServer) cluster.Status {
	t.Helper()
	code, body := ts.api("GET", "/api/v1/cluster", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/cluster: %d %s", code, body)
	}
	var st cluster.Status
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// leader waits until exactly one of the running instances leads, and
// returns it.
func (sh *sharing) leader(running ...*testServer) *testServer {
	sh.t.Helper()
	if len(running) == 0 {
		running = sh.ins
	}
	var lead *testServer
	testkit.WaitFor(sh.t, "one leading instance", func() bool {
		lead = nil
		n := 0
		for _, ts := range running {
			if clusterStatus(sh.t, ts).Leading {
				lead, n = ts, n+1
			}
		}
		return n == 1
	})
	return lead
}

// followers are the running instances other than lead.
func (sh *sharing) followers(lead *testServer) []*testServer {
	var out []*testServer
	for _, ts := range sh.ins {
		if ts != lead && !stopped[ts.Server] {
			out = append(out, ts)
		}
	}
	return out
}

// every waits until cond holds for the agent on every running instance.
func (sh *sharing) every(uid uuid.UUID, what string, cond func(admin.Agent) bool) {
	sh.t.Helper()
	for _, ts := range sh.ins {
		if !stopped[ts.Server] {
			ts.waitAgent(uid, what+" (on "+ts.OpAMPAddr().String()+")", cond)
		}
	}
}

func countEvents(a admin.Agent, typ string) int {
	n := 0
	for _, e := range a.Events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

type hostPair struct {
	host string
	col  uuid.UUID
	colc client.OpAMPClient
	upd  *fakeUpdater
}

// pair starts a host's collector on one instance and its updater on another.
func (sh *sharing) pair(host string, colOn, updOn *testServer) hostPair {
	sh.t.Helper()
	col, c := colOn.startCollector(sh.token, host, "0.149.0")
	p := hostPair{host: host, col: col, colc: c, upd: updOn.startUpdater(sh.token, col, host, "binary")}
	sh.every(col, "linked", func(a admin.Agent) bool { return pairingOf(a)["state"] == "linked" })
	return p
}

// distinctOffers is how many different package sets an updater was sent.
func distinctOffers(u *fakeUpdater) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	var seen [][]byte
	for _, o := range u.offers {
		if !slices.ContainsFunc(seen, func(h []byte) bool { return bytes.Equal(h, o.AllPackagesHash) }) {
			seen = append(seen, o.AllPackagesHash)
		}
	}
	return len(seen)
}

// Only the leader decides rollouts: an install failure reported to an
// instance that does not lead (where the updater is connected) pauses the
// rollout for every instance, and the next wave is offered by none; each
// offer transition is recorded once in the collector's history, wherever
// it is connected; an operator's resume and retry sent to instances that
// do not lead reach the leader, and their answers show what it did.
func TestOnlyTheLeaderDecidesRollouts(t *testing.T) {
	est := newEstate(t)
	est.addVersion("0.149.0")
	est.addVersion("0.149.1")
	sh := startSharing(t, 3, est)
	lead := sh.leader()
	f := sh.followers(lead)
	a := sh.pair("a", f[1], f[0]) // wave 1: its updater on a follower
	b := sh.pair("b", f[0], f[1]) // wave 2
	est.write("inventory/waves.yaml", fmt.Sprintf("- {instanceUid: %s, labels: {wave: \"1\"}}\n- {instanceUid: %s, labels: {wave: \"2\"}}\n", a.col, b.col))
	est.fleet("edge", "0.149.1", "rollout: {waveLabel: wave, waves: [\"1\", \"2\"], maxFailures: 0}\n")
	sh.every(a.col, "wave 1 offered", offerState("offered"))
	sh.every(b.col, "wave 2 waiting", offerState("waiting_wave"))

	offer := a.upd.waitOffer("wave 1", func(*protobufs.PackagesAvailable) bool { return true })
	if !strings.HasPrefix(offer.Packages[pkgName].File.DownloadUrl, f[0].BaseURL()) {
		t.Fatalf("offer delivered by %s with the download URL %s: want the delivering instance's", f[0].BaseURL(), offer.Packages[pkgName].File.DownloadUrl)
	}
	a.upd.report(offer, pkgName, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, "pre-activation check failed")
	sh.every(a.col, "failed", offerState("failed"))
	sh.every(b.col, "paused", offerState("paused"))
	for _, ts := range sh.ins {
		testkit.WaitFor(t, "the rollout paused after one failure on "+ts.OpAMPAddr().String(), func() bool {
			fl := fleets(t, ts)["edge"]
			return fl.Rollout.State == "paused" && fl.Rollout.Failures == 1
		})
	}
	if n := b.upd.offerCount(); n != 0 {
		t.Fatalf("the next wave's updater got %d offers while the rollout is paused", n)
	}
	sh.every(a.col, "the failure in its history", func(x admin.Agent) bool { return countEvents(x, "offer_failed") > 0 })

	// Resume on a follower: the leader resumes, the answer shows it.
	code, body := f[1].api("POST", "/api/v1/fleets/edge/resume", nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"state": "running"`) {
		t.Fatalf("resume on a follower: %d %s", code, body)
	}
	if code, body := f[0].api("POST", "/api/v1/fleets/nope/resume", nil); code != http.StatusNotFound || !strings.Contains(string(body), "nope") {
		t.Fatalf("resume of an unknown fleet on a follower: %d %s", code, body)
	}
	sh.every(b.col, "wave 2 offered after the resume", offerState("offered"))
	b.upd.waitOffer("wave 2 after the resume", func(*protobufs.PackagesAvailable) bool { return true })

	// Retry on a follower: the failed offer is made again.
	code, body = f[0].api("POST", "/api/v1/agents/"+a.col.String()+"/retry", nil)
	if code != http.StatusOK {
		t.Fatalf("retry on a follower: %d %s", code, body)
	}
	sh.every(a.col, "offered again after the retry", offerState("offered"))
	testkit.WaitFor(t, "the retried offer delivered", func() bool { return a.upd.offerCount() >= 2 })
	if distinctOffers(a.upd) != 1 || distinctOffers(b.upd) != 1 {
		t.Fatalf("distinct offers: %d and %d, want one each", distinctOffers(a.upd), distinctOffers(b.upd))
	}
	// Each transition was recorded once, by the leader, in the history the
	// instance the collector is connected to writes.
	sh.every(a.col, "the second offer in its history", func(x admin.Agent) bool { return countEvents(x, "offer_offered") > 1 })
	for _, ts := range sh.ins {
		got := ts.mustAgent(a.col)
		if countEvents(got, "offer_offered") != 2 || countEvents(got, "offer_failed") != 1 || countEvents(got, "offer_retry") != 1 {
			t.Fatalf("history of the wave 1 collector on %s: %d offered, %d failed, %d retry events; want 2, 1, 1: %+v",
				ts.OpAMPAddr(), countEvents(got, "offer_offered"), countEvents(got, "offer_failed"), countEvents(got, "offer_retry"), got.Events)
		}
	}
}

// When the leader stops, another instance takes over and continues the
// rollout from where it was: a collector that completed its wave meanwhile
// opens the next one, no offer is made twice, and a wave is never offered
// before the previous one is done.
func TestLeaderTakeoverContinuesRollout(t *testing.T) {
	est := newEstate(t)
	est.addVersion("0.149.0")
	est.addVersion("0.149.1")
	sh := startSharing(t, 3, est)
	lead := sh.leader()
	f := sh.followers(lead)
	var pairs []hostPair
	var inv strings.Builder
	for i, host := range []string{"w1", "w2", "w3"} {
		p := sh.pair(host, f[i%2], f[(i+1)%2])
		pairs = append(pairs, p)
		fmt.Fprintf(&inv, "- {instanceUid: %s, labels: {wave: \"%d\"}}\n", p.col, i+1)
	}
	est.write("inventory/waves.yaml", inv.String())
	est.fleet("edge", "0.149.1", "rollout: {waveLabel: wave, waves: [\"1\", \"2\", \"3\"], maxFailures: 0}\n")
	sh.every(pairs[0].col, "wave 1 offered", offerState("offered"))
	sh.every(pairs[1].col, "wave 2 waiting", offerState("waiting_wave"))

	lead.stop()
	next := sh.leader(f...)
	if next == lead {
		t.Fatal("a stopped instance leads")
	}
	for i, p := range pairs {
		offer := p.upd.waitOffer(p.host, func(*protobufs.PackagesAvailable) bool { return true })
		for _, later := range pairs[i+1:] {
			if later.upd.offerCount() != 0 {
				t.Fatalf("%s offered before %s completed", later.host, p.host)
			}
		}
		for _, st := range []protobufs.PackageStatusEnum{protobufs.PackageStatusEnum_PackageStatusEnum_Downloading,
			protobufs.PackageStatusEnum_PackageStatusEnum_Installing, protobufs.PackageStatusEnum_PackageStatusEnum_Installed} {
			p.upd.report(offer, pkgName, st, "")
		}
		sh.every(p.col, "installed", offerState("installed"))
		setVersion(t, p.colc, p.col, p.host, "0.149.1")
		sh.every(p.col, "up to date", offerState("up_to_date"))
	}
	for _, ts := range sh.followers(nil) {
		testkit.WaitFor(t, "the rollout complete on "+ts.OpAMPAddr().String(), func() bool { return fleets(t, ts)["edge"].Rollout.State == "complete" })
	}
	for _, p := range pairs {
		if n := distinctOffers(p.upd); n != 1 {
			t.Fatalf("%s's updater was sent %d different offers", p.host, n)
		}
	}
}

// An agent whose connection to one instance closes is offline on the
// others at once, not when its lease (3 heartbeats) ends; when it comes
// back through another instance it is online again.
func TestClosedConnectionOfflineEverywhere(t *testing.T) {
	pg := testenv.StartCluster(t)
	start := func() *testServer {
		return startServer(t, func(o *server.Options) { o.Store, o.Heartbeat = pg.DSN("postgres"), 20*time.Second }) // leases of 60 s
	}
	a, b := start(), start()
	tok := a.createToken("edge", nil)
	testkit.WaitFor(t, "the token on B", func() bool { return b.Tokens().TokenName(tok.ID) != "" })
	uid, c := a.startCollector(tok.Token, "h1", "0.149.0")
	b.waitAgent(uid, "online on B", func(x admin.Agent) bool { return x.Online })
	if err := c.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	b.waitAgent(uid, "offline on B after its connection to A closed", func(x admin.Agent) bool { return !x.Online })
	if waited := time.Since(t0); waited > 20*time.Second {
		t.Fatalf("offline on B after %s: the lease ran out rather than the close being told", waited)
	}
	b.startCollectorWithUID(tok.Token, "h1", "0.149.0", uid)
	a.waitAgent(uid, "online on A once back through B", func(x admin.Agent) bool { return x.Online })
}

// Only the leader collects configuration bodies: an instance that does not
// lead and reloads another estate (a Blueprint changed there first) renders
// nothing and deletes nothing, so every hash the leader's records name
// keeps its body in the store, and its collectors keep their configuration.
func TestOnlyTheLeaderCollectsBodies(t *testing.T) {
	pg := testenv.StartCluster(t)
	estA, estB := newEstate(t), newEstate(t)
	for _, est := range []*testEstate{estA, estB} {
		est.mkdir("teams/data-flow/blueprints")
		est.write("teams/data-flow/blueprints/gw.yaml", configBlueprint)
		est.write("fleets/edge.yaml", "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: data-flow/gw\n")
	}
	start := func(dir string) *testServer {
		return startServer(t, func(o *server.Options) {
			o.Store, o.Estate, o.EstatePoll, o.Heartbeat = pg.DSN("postgres"), dir, 50*time.Millisecond, time.Second
		})
	}
	a := start(estA.dir)
	testkit.WaitFor(t, "A to lead", func() bool { return clusterStatus(t, a).Leading })
	b := start(estB.dir)
	tok := a.createToken("edge", nil)
	testkit.WaitFor(t, "the token on B", func() bool { return b.Tokens().TokenName(tok.ID) != "" })
	col := b.startConfigCollector(tok.Token, "edge-007")
	good := deref(assignmentOf(t, a.waitAgent(col.uid, "in sync", syncState(configs.SyncInSync))).Assigned)

	estB.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(configBlueprint, "${site.id}.json", "${site.id}-v2.json", 1))
	testkit.WaitFor(t, "B to run its new estate", func() bool { return clusterStatus(t, b).EstateMismatch })
	b.Registry().Flush()
	time.Sleep(500 * time.Millisecond) // what B would have written is written
	db, err := postgres.Open(t.Context(), pg.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, bodies, err := db.LoadConfigs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := bodies[good]; !ok {
		t.Fatal("the body the leader's record names was deleted")
	}
	for _, ts := range []*testServer{a, b} {
		as := assignmentOf(t, ts.mustAgent(col.uid))
		if deref(as.Assigned) != good || deref(as.Desired) != good || as.SyncState != configs.SyncInSync {
			t.Fatalf("assignment on %s after the follower's reload: %+v", ts.OpAMPAddr(), as)
		}
	}
}
