package server_test

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/configs"
)

const configBlueprint = `name: gw
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
          endpoint: 127.0.0.1:4318
  - name: out
    class: exporter
    type: file
    version: 1
    config:
      path: /var/lib/otelcol/${site.id}.json
pipelines:
  logs:
    - component: in
    - component: out
`

// configCollector is a real opamp-go client that behaves like a collector
// under the Supervisor: it applies a remote config (FAILED when the config
// names an unknown type "nosuch") and reports the status with the hash.
type configCollector struct {
	uid uuid.UUID
	c   client.OpAMPClient

	mu     sync.Mutex
	bodies map[string][]byte // by hash, every config received
	last   string            // hash of the last config received
}

// startConfigCollector starts one at version 0.149.0, or at version[0].
func (ts *testServer) startConfigCollector(token, site string, version ...string) *configCollector {
	ts.t.Helper()
	v := "0.149.0"
	if len(version) > 0 {
		v = version[0]
	}
	cc := &configCollector{uid: newUID(ts.t), bodies: map[string][]byte{}}
	cc.mu.Lock() // until cc.c is set: replies wait for it
	defer cc.mu.Unlock()
	cc.c = ts.connect(agentSpec{uid: cc.uid, token: token,
		identifying: kvs("service.name", "otelcol-contrib", "service.version", v, "service.instance.id", cc.uid.String()),
		nonIdent:    kvs("host.name", "h-"+site, "os.type", "linux", "host.arch", "amd64", "site.type", "edge", "site.id", site),
		capabilities: baseCaps | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
			protobufs.AgentCapabilities_AgentCapabilities_ReportsRemoteConfig,
		onMessage: func(m *types.MessageData) {
			rc := m.RemoteConfig
			if rc == nil {
				return
			}
			body := rc.GetConfig().GetConfigMap()[""].GetBody()
			st := &protobufs.RemoteConfigStatus{LastRemoteConfigHash: rc.ConfigHash, Status: protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED}
			if strings.Contains(string(body), "nosuch/") {
				st.Status = protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED
				st.ErrorMessage = `unknown type: "nosuch"`
			}
			go func() {
				cc.mu.Lock()
				defer cc.mu.Unlock()
				h := hex.EncodeToString(rc.ConfigHash)
				cc.bodies[h], cc.last = body, h
				_ = cc.c.SetRemoteConfigStatus(st)
			}()
		},
	})
	return cc
}

func (cc *configCollector) body(hash string) []byte {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.bodies[hash]
}

func assignmentOf(t *testing.T, a admin.Agent) configs.Assignment {
	t.Helper()
	b, _ := json.Marshal(a.Assignment)
	var as configs.Assignment
	if err := json.Unmarshal(b, &as); err != nil {
		t.Fatal(err)
	}
	return as
}

func syncState(want string) func(admin.Agent) bool {
	return func(a admin.Agent) bool {
		b, _ := json.Marshal(a.Assignment)
		var as struct{ SyncState string }
		json.Unmarshal(b, &as)
		return as.SyncState == want
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// A fleet's Blueprint reaches a collector rendered with its site, the
// estate reloads itself when its revision changes, a failed configuration
// is rolled back and retried on request, and all of it survives a restart.
func TestConfigurationEndToEnd(t *testing.T) {
	est := newEstate(t)
	est.mkdir("teams/data-flow/blueprints")
	est.write("teams/data-flow/blueprints/gw.yaml", configBlueprint)
	est.write("fleets/edge.yaml", "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: data-flow/gw\n")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir; o.EstatePoll = 50 * time.Millisecond })
	tok := ts.createToken("edge", nil)

	var st server.EstateStatus
	ts.getJSON("/api/v1/estate", &st)
	if st.Revision == nil || !strings.HasPrefix(*st.Revision, "sha256:") || st.LoadedAt == nil || st.Errors == nil || len(st.Errors) != 0 {
		t.Fatalf("estate %+v", st)
	}
	rev1 := *st.Revision

	col := ts.startConfigCollector(tok.Token, "edge-007")
	a := ts.waitAgent(col.uid, "in sync", syncState(configs.SyncInSync))
	as := assignmentOf(t, a)
	good := deref(as.Assigned)
	if good == "" || deref(as.Desired) != good || deref(as.Reported.Hash) != good || as.Reported.Status != "applied" ||
		deref(as.Fleet) != "edge" || deref(as.Blueprint) != "data-flow/gw" || deref(as.Revision) != rev1 || as.Failed != nil {
		t.Fatalf("assignment %+v", as)
	}
	if !strings.Contains(string(col.body(good)), "/var/lib/otelcol/edge-007.json") {
		t.Fatalf("config received: %s", col.body(good))
	}
	code, body := ts.api("GET", "/api/v1/agents/"+col.uid.String()+"/config", nil)
	if code != 200 || string(body) != string(col.body(good)) {
		t.Fatalf("GET config: %d %s", code, body)
	}
	if code, _ := ts.api("GET", "/api/v1/agents/"+col.uid.String()+"/config?hash=zz", nil); code != 400 {
		t.Fatalf("bad hash: %d", code)
	}
	if code, body := ts.api("GET", "/api/v1/agents?syncState=in_sync", nil); code != 200 || !strings.Contains(string(body), col.uid.String()) {
		t.Fatalf("filter: %d %s", code, body)
	}
	if code, body := ts.api("GET", "/api/v1/agents?syncState=bogus", nil); code != 400 || !strings.Contains(string(body), "syncState") {
		t.Fatalf("bad filter: %d %s", code, body)
	}
	f := fleets(t, ts)["edge"]
	cfgJSON, _ := json.Marshal(f.Config)
	if f.Rollout.State != "none" || !strings.Contains(string(cfgJSON), `"inSync":1`) || !strings.Contains(string(cfgJSON), `"blueprint":"data-flow/gw"`) {
		t.Fatalf("fleet %+v config %s", f, cfgJSON)
	}

	// A broken estate is not applied: the errors show, the old one stays.
	est.write("fleets/edge.yaml", "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: data-flow/nope\n")
	testkit.WaitFor(t, "the poll to report the broken estate", func() bool {
		ts.getJSON("/api/v1/estate", &st)
		return len(st.Errors) > 0
	})
	if !strings.Contains(st.Errors[0].Message, "data-flow/nope") || st.Errors[0].File != "fleets/edge.yaml" || st.Errors[0].Line != 3 || *st.Revision != rev1 {
		t.Fatalf("estate %+v", st)
	}

	// A new revision the collector rejects: failed, rolled back, retried.
	est.write("fleets/edge.yaml", "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: data-flow/gw\n")
	est.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(configBlueprint, "type: file", "type: nosuch", 1))
	// Rolled back to the last applied configuration: drift (seed 003),
	// the failed hash and its reason kept.
	a = ts.waitAgent(col.uid, "failed and rolled back", func(a admin.Agent) bool {
		as := assignmentOf(t, a)
		return as.SyncState == configs.SyncDrift && as.Failed != nil
	})
	as = assignmentOf(t, a)
	bad := deref(as.Assigned)
	if bad == good || deref(as.Failed) != bad || deref(as.Desired) != good || !strings.Contains(deref(as.FailedReason), "nosuch") {
		t.Fatalf("after FAILED: %+v", as)
	}
	ts.waitAgent(col.uid, "rolled back and applied", func(a admin.Agent) bool {
		as := assignmentOf(t, a)
		return deref(as.Reported.Hash) == good && as.Reported.Status == "applied"
	})
	if _, ok := hasEvent(ts.mustAgent(col.uid), "config_rolled_back"); !ok {
		t.Fatal("no config_rolled_back event")
	}
	ts.getJSON("/api/v1/estate", &st)
	if len(st.Errors) != 0 || *st.Revision == rev1 {
		t.Fatalf("estate after the fix %+v", st)
	}
	if code, body := ts.api("POST", "/api/v1/agents/"+col.uid.String()+"/config/retry", nil); code != 200 {
		t.Fatalf("retry: %d %s", code, body)
	}
	ts.waitAgent(col.uid, "the failed hash offered again and failed again", func(a admin.Agent) bool {
		n := 0
		for _, ev := range a.Events {
			if ev.Type == "config_failed" {
				n++
			}
		}
		return n >= 2
	})

	ts = ts.restart()
	as = assignmentOf(t, ts.mustAgent(col.uid))
	if deref(as.Assigned) != bad || deref(as.Failed) != bad || as.SyncState != configs.SyncDrift || !strings.Contains(deref(as.FailedReason), "nosuch") {
		t.Fatalf("after restart: %+v", as)
	}
}

func (ts *testServer) getJSON(path string, v any) {
	ts.t.Helper()
	code, body := ts.api("GET", path, nil)
	if code != 200 {
		ts.t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		ts.t.Fatalf("GET %s: %v", path, err)
	}
}

func (ts *testServer) mustAgent(uid uuid.UUID) admin.Agent {
	ts.t.Helper()
	a, ok := ts.agent(uid)
	if !ok {
		ts.t.Fatalf("no agent %s", uid)
	}
	return a
}

func (e *testEstate) mkdir(rel string) {
	e.t.Helper()
	if err := os.MkdirAll(filepath.Join(e.dir, rel), 0o755); err != nil {
		e.t.Fatal(err)
	}
}
