package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/cluster"
	"github.com/myriarch/myriarch/server/configs"
	"github.com/myriarch/myriarch/server/offers"
	"github.com/myriarch/myriarch/server/registry"
)

// startInstances starts n myriarchd instances on one private PostgreSQL,
// sharing an admin token, with a 1 s heartbeat (so leases are 3 s).
func startInstances(t *testing.T, n int) []*testServer {
	t.Helper()
	pg := testenv.StartCluster(t)
	tokenFile := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(tokenFile, []byte("myradm_shared_by_every_instance_0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out []*testServer
	for range n {
		out = append(out, startServer(t, func(o *server.Options) {
			o.Store = pg.DSN("postgres")
			o.AdminTokenFile = tokenFile
			o.Heartbeat = time.Second
		}))
	}
	return out
}

func (ts *testServer) listUIDs() []string {
	ts.t.Helper()
	return ts.listUIDsQuery("")
}

// listUIDsQuery lists the UIDs of the agents GET /api/v1/agents?query
// answers.
func (ts *testServer) listUIDsQuery(query string) []string {
	ts.t.Helper()
	code, body := ts.api("GET", "/api/v1/agents?"+query, nil)
	if code != http.StatusOK {
		ts.t.Fatalf("list agents: %d %s", code, body)
	}
	var list struct {
		Agents []admin.Agent `json:"agents"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		ts.t.Fatal(err)
	}
	var out []string
	for _, a := range list.Agents {
		out = append(out, a.InstanceUID)
	}
	return out
}

// Two instances on one database are one estate: a token made on one
// admits agents on the other; an agent connected to one is listed, with
// its labels and online, by the other; an agent that reconnects to the
// other instance keeps its identity binding, labels and history; its
// binding is enforced there too; a revocation on one disconnects it from
// the other; and when an instance stops, the other shows its agents
// offline once their lease (3 heartbeats) expires.
func TestInstancesShareTheEstate(t *testing.T) {
	ins := startInstances(t, 2)
	a, b := ins[0], ins[1]
	tok := a.createToken("edge", map[string]string{"wave": "1"})
	other := b.createToken("other", nil)
	deadline := time.Now().Add(15 * time.Second)
	for b.Tokens().TokenName(tok.ID) == "" || a.Tokens().TokenName(other.ID) == "" {
		if time.Now().After(deadline) {
			t.Fatal("a token created on one instance is unknown to the other")
		}
		time.Sleep(20 * time.Millisecond)
	}

	uid := newUID(t)
	desc := func(host string) agentSpec {
		return agentSpec{uid: uid, token: tok.Token,
			identifying: kvs("service.name", "otelcol-contrib", "service.version", "0.149.0", "service.instance.id", uid.String()),
			nonIdent:    kvs("host.name", host, "os.type", "linux")}
	}
	onA := a.connect(desc("h1"))
	a.waitAgent(uid, "online on A", func(x admin.Agent) bool { return x.Online })
	seenByB := b.waitAgent(uid, "listed by B, online, with its labels", func(x admin.Agent) bool {
		return x.Online && x.Labels["wave"] == "1" && x.Attributes["host.name"] == "h1"
	})
	if !slices.Contains(b.listUIDs(), uid.String()) {
		t.Fatal("B's agent listing lacks the agent connected to A")
	}

	// The agent moves to B (as behind a load balancer after A's connection dropped).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	onA.Stop(ctx)
	cancel()
	b.connect(desc("h2"))
	moved := b.waitAgent(uid, "connected to B with its new description", func(x admin.Agent) bool {
		return x.Online && x.Attributes["host.name"] == "h2"
	})
	if !moved.FirstSeen.Equal(seenByB.FirstSeen) || moved.Labels["wave"] != "1" {
		t.Fatalf("the agent did not continue on B: first seen %v → %v, labels %v", seenByB.FirstSeen, moved.FirstSeen, moved.Labels)
	}
	registered := 0
	for _, e := range moved.Events {
		if e.Type == registry.EventRegistered {
			registered++
		}
	}
	if registered != 1 {
		t.Fatalf("%d registered events on B, want the one from A (history continues)", registered)
	}
	a.waitAgent(uid, "A sees B's description", func(x admin.Agent) bool { return x.Attributes["host.name"] == "h2" && x.Online })

	// The binding to the token holds on either instance.
	thief := desc("h3")
	thief.token = other.Token
	a.connect(thief)
	a.waitAgent(uid, "the other credential refused on A", func(x admin.Agent) bool {
		_, ok := hasEvent(x, registry.EventIdentityConflict)
		return ok
	})

	// Revoked on A: B disconnects it.
	if code, body := a.api("DELETE", "/api/v1/tokens/"+tok.ID, nil); code != http.StatusOK {
		t.Fatalf("revoke: %d %s", code, body)
	}
	b.waitAgent(uid, "disconnected from B after the revocation on A", func(x admin.Agent) bool { return !x.Online })

	// An instance that stops: its agents go offline on the other once their lease ends.
	tok2 := a.createToken("edge2", nil)
	for b.Tokens().TokenName(tok2.ID) == "" {
		time.Sleep(20 * time.Millisecond)
	}
	uid2 := newUID(t)
	a.connect(agentSpec{uid: uid2, token: tok2.Token, identifying: kvs("service.name", "otelcol-contrib", "service.instance.id", uid2.String())})
	b.waitAgent(uid2, "online on B via A", func(x admin.Agent) bool { return x.Online })
	a.stop()
	b.waitAgent(uid2, "offline on B after A stopped", func(x admin.Agent) bool { return !x.Online })
}

// One instance leads (GET /api/v1/cluster on any instance names it); an
// instance deployed with another estate than the leader's says so; when
// the leader stops, another instance leads within a few seconds.
func TestClusterLeaderAndEstateRevisions(t *testing.T) {
	pg := testenv.StartCluster(t)
	estA, estB := newEstate(t), newEstate(t)
	estA.addVersion("0.149.0")
	estB.addVersion("0.149.1")
	start := func(dir string) *testServer {
		return startServer(t, func(o *server.Options) {
			o.Store, o.Estate, o.Heartbeat = pg.DSN("postgres"), dir, time.Second
		})
	}
	a := start(estA.dir)
	b := start(estB.dir)
	c := start(estA.dir)
	status := func(ts *testServer) cluster.Status {
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
	var leader *testServer
	deadline := time.Now().Add(20 * time.Second)
	for {
		var leading []*testServer
		agreed := true
		for _, ts := range []*testServer{a, b, c} {
			st := status(ts)
			if st.Leading {
				leading = append(leading, ts)
			}
			if st.Leader == nil || (len(leading) == 1 && st.Leader.Instance != status(leading[0]).Instance) {
				agreed = false
			}
		}
		if len(leading) > 1 {
			t.Fatalf("%d instances lead at once", len(leading))
		}
		if len(leading) == 1 && agreed {
			leader = leading[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the instances never agreed on one leader")
		}
		time.Sleep(50 * time.Millisecond)
	}
	odd := b // runs another estate than a and c
	if leader == b {
		odd = a // b leads: a and c differ from it
	}
	deadline = time.Now().Add(20 * time.Second)
	for !status(odd).EstateMismatch {
		if time.Now().After(deadline) {
			t.Fatalf("an instance with another estate than the leader's does not say so: %+v", status(odd))
		}
		time.Sleep(50 * time.Millisecond)
	}
	code, body := odd.api("GET", "/api/v1/estate", nil)
	var est server.EstateStatus
	if err := json.Unmarshal(body, &est); code != http.StatusOK || err != nil || est.Cluster == nil || !est.Cluster.EstateMismatch {
		t.Fatalf("GET /api/v1/estate on the instance with another estate: %d %s", code, body)
	}
	if st := status(leader); st.EstateMismatch {
		t.Fatalf("the leader reports a mismatch with itself: %+v", st)
	}
	old := status(leader).Instance
	leader.stop()
	deadline = time.Now().Add(20 * time.Second)
	for {
		found := false
		for _, ts := range []*testServer{a, b, c} {
			if ts != leader && status(ts).Leading {
				found = true
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no instance took over from %s", old)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Configuration assignments span instances: an agent's reported status and
// failed hashes, written by the instance it is connected to, show on the
// other; when it moves there, that instance sends it the desired (rolled
// back) configuration and never the failed one.
func TestConfigAssignmentsAcrossInstances(t *testing.T) {
	pg := testenv.StartCluster(t)
	est := newEstate(t)
	est.mkdir("teams/data-flow/blueprints")
	est.write("teams/data-flow/blueprints/gw.yaml", configBlueprint)
	est.write("fleets/edge.yaml", "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: data-flow/gw\n")
	start := func() *testServer {
		return startServer(t, func(o *server.Options) {
			o.Store, o.Estate, o.EstatePoll, o.Heartbeat = pg.DSN("postgres"), est.dir, 50*time.Millisecond, time.Second
		})
	}
	a, b := start(), start()
	tok := a.createToken("edge", nil)
	for b.Tokens().TokenName(tok.ID) == "" {
		time.Sleep(20 * time.Millisecond)
	}
	col := a.startConfigCollector(tok.Token, "edge-007")
	good := deref(assignmentOf(t, a.waitAgent(col.uid, "in sync on A", syncState(configs.SyncInSync))).Assigned)
	b.waitAgent(col.uid, "in sync on B", func(x admin.Agent) bool {
		as := assignmentOf(t, x)
		return as.SyncState == configs.SyncInSync && deref(as.Reported.Hash) == good
	})

	est.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(configBlueprint, "type: file", "type: nosuch", 1))
	a.waitAgent(col.uid, "failed and rolled back on A", func(x admin.Agent) bool {
		as := assignmentOf(t, x)
		return as.SyncState == configs.SyncDrift && as.Failed != nil && deref(as.Reported.Hash) == good && as.Reported.Status == "applied"
	})
	bad := deref(assignmentOf(t, a.mustAgent(col.uid)).Failed)
	b.waitAgent(col.uid, "the failed hash known on B", func(x admin.Agent) bool {
		as := assignmentOf(t, x)
		return deref(as.Failed) == bad && deref(as.Desired) == good
	})

	// The collector moves to B.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	col.c.Stop(ctx)
	cancel()
	newUIDOverride = &col.uid
	moved := b.startConfigCollector(tok.Token, "edge-007")
	newUIDOverride = nil
	testkit.WaitFor(t, "B to send the desired configuration", func() bool { return moved.body(good) != nil })
	if moved.body(bad) != nil {
		t.Fatal("B sent the configuration that failed on A")
	}
	if as := assignmentOf(t, b.mustAgent(col.uid)); deref(as.Failed) != bad || as.SyncState != configs.SyncDrift || deref(as.FailedReason) == "" {
		t.Fatalf("on B after the move: %+v", as)
	}
}

// Pairing spans instances: an updater on A and its collector on B link on
// both; a second updater claiming that collector from B makes it
// ambiguous on both.
func TestPairingAcrossInstances(t *testing.T) {
	ins := startInstances(t, 2)
	a, b := ins[0], ins[1]
	tok := a.createToken("edge", nil)
	for b.Tokens().TokenName(tok.ID) == "" {
		time.Sleep(20 * time.Millisecond)
	}
	col, upd1, upd2 := newUID(t), newUID(t), newUID(t)
	updater := func(uid uuid.UUID, host string) agentSpec {
		return agentSpec{uid: uid, token: tok.Token,
			identifying: kvs("service.name", "myriarch-updater", "service.version", "0.1.0", "service.instance.id", uid.String()),
			nonIdent: kvs("host.name", host, "os.type", "linux", "host.arch", "amd64",
				"dev.myriarch.collector.instance_uid", col.String(), "dev.myriarch.install.mode", "binary")}
	}
	b.connect(agentSpec{uid: col, token: tok.Token,
		identifying:  kvs("service.name", "otelcol-contrib", "service.version", "0.149.0", "service.instance.id", col.String()),
		nonIdent:     kvs("host.name", "h1", "os.type", "linux", "host.arch", "amd64"),
		capabilities: baseCaps | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig})
	a.connect(updater(upd1, "h1"))
	pairing := func(ts *testServer) offers.CollectorPairing {
		var p struct {
			Collectors []struct {
				InstanceUID string `json:"instanceUid"`
				offers.CollectorPairing
			} `json:"collectors"`
		}
		ts.getJSON("/api/v1/pairings", &p)
		for _, c := range p.Collectors {
			if c.InstanceUID == col.String() {
				return c.CollectorPairing
			}
		}
		return offers.CollectorPairing{}
	}
	for _, ts := range []*testServer{a, b} {
		testkit.WaitFor(t, "the collector linked to the updater on the other instance", func() bool {
			p := pairing(ts)
			return p.State == "linked" && p.Updater != nil && *p.Updater == upd1.String()
		})
	}
	b.connect(updater(upd2, "h1"))
	for _, ts := range []*testServer{a, b} {
		testkit.WaitFor(t, "two claimants on two instances ambiguous", func() bool {
			p := pairing(ts)
			return p.State == "ambiguous" && len(p.Claimants) == 2
		})
	}
}

// An instance that starts while agents are connected to another one shows
// them online as soon as it serves, not only after its first lease sweep
// (a heartbeat later).
func TestLateInstanceSeesAgentsOnline(t *testing.T) {
	pg := testenv.StartCluster(t)
	a := startServer(t, func(o *server.Options) { o.Store = pg.DSN("postgres") }) // 30 s heartbeat
	tok := a.createToken("edge", nil)
	uid := newUID(t)
	a.connect(agentSpec{uid: uid, token: tok.Token, identifying: kvs("service.name", "otelcol-contrib", "service.instance.id", uid.String())})
	a.waitAgent(uid, "online on A", func(x admin.Agent) bool { return x.Online })
	a.Registry().Flush()
	b := startServer(t, func(o *server.Options) { o.Store = pg.DSN("postgres") })
	if x, _ := b.agent(uid); !x.Online {
		t.Fatal("an instance that just started shows an agent connected to another instance offline")
	}
}

// A collector renders with the providers of its updater connected to
// another instance: the snapshot the updater sends there reaches the
// collector's instance.
func TestHostContextAcrossInstances(t *testing.T) {
	pg := testenv.StartCluster(t)
	est := newEstate(t)
	est.mkdir("teams/data-flow/blueprints")
	est.write("teams/data-flow/blueprints/gw.yaml", containersBlueprint)
	est.write("fleets/edge.yaml", "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: data-flow/gw\n")
	start := func() *testServer {
		return startServer(t, func(o *server.Options) {
			o.Store, o.Estate, o.Heartbeat = pg.DSN("postgres"), est.dir, time.Second
		})
	}
	a, b := start(), start()
	tok := a.createToken("edge", nil)
	for b.Tokens().TokenName(tok.ID) == "" {
		time.Sleep(20 * time.Millisecond)
	}
	col := b.startConfigCollector(tok.Token, "s1")
	b.waitAgent(col.uid, "in sync", syncState(configs.SyncInSync))
	upd := a.startUpdater(tok.Token, col.uid, "h-s1", "binary")
	b.waitAgent(col.uid, "linked on B to the updater on A", func(x admin.Agent) bool { return pairingOf(x)["state"] == "linked" })
	upd.sendSnapshot(snapshot(1, "c1"))
	b.waitAgent(col.uid, "rendered on B with the providers sent to A", func(x admin.Agent) bool {
		return deref(assignmentOf(t, x).Context) == configs.ContextAttributesUpdater && strings.Contains(desiredBodyHere(b, col.uid.String()), "filelog")
	})
}
