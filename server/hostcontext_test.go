package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"
	yaml "go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/configrender"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/configs"
	"github.com/myriarch/myriarch/server/hostcontext"
)

const containersBlueprint = `name: gw
version: 1
owner: data-flow-owners
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
  - name: files
    class: receiver
    type: filelog
    version: 1
    config:
      include: ["${docker.paths.log}"]
  - name: out
    class: exporter
    type: debug
    version: 1
    config:
      verbosity: ${local.verbosity|'basic'}
pipelines:
  logs:
    - component: in
    - component: files
    - component: out
`

// sendSnapshot sends a providers snapshot as the updater does.
func (u *fakeUpdater) sendSnapshot(doc any) {
	u.t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		u.t.Fatal(err)
	}
	u.sendRaw(hostcontext.MessageType, data)
}

func (u *fakeUpdater) sendRaw(typ string, data []byte) {
	u.t.Helper()
	if err := u.client.SetCustomCapabilities(&protobufs.CustomCapabilities{Capabilities: []string{hostcontext.Capability}}); err != nil {
		u.t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		sent, err := u.client.SendCustomMessage(&protobufs.CustomMessage{Capability: hostcontext.Capability, Type: typ, Data: data})
		if errors.Is(err, types.ErrCustomMessagePending) && time.Now().Before(deadline) {
			<-sent
			continue
		}
		if err != nil {
			u.t.Fatal(err)
		}
		return
	}
}

func snapshot(seq int, containers ...string) map[string]any {
	var ms []any
	for _, c := range containers {
		ms = append(ms, map[string]any{"id": c, "mapping": map[string]any{
			"container": map[string]any{"id": c, "name": "name-" + c},
			"paths":     map[string]any{"log": "/var/lib/docker/containers/" + c + "/" + c + "-json.log"}},
			"processors": []any{map[string]any{"add_fields": map[string]any{"target": "container", "fields": map[string]any{"name": "name-" + c}}}}})
	}
	return map[string]any{"seq": seq, "context": map[string]any{"local": map[string]any{"verbosity": "detailed"}, "host": map[string]any{"name": "from-the-updater", "ip": []any{"10.0.0.1"}}},
		"dynamic": map[string]any{"docker": ms}}
}

func desiredBody(t *testing.T, ts *testServer, col string) string {
	t.Helper()
	code, body := ts.api("GET", "/api/v1/agents/"+col+"/config", nil)
	if code != 200 {
		t.Fatalf("GET config: %d %s", code, body)
	}
	return string(body)
}

// desiredBodyHere is the desired configuration's body once ts holds it, ""
// before: an instance that does not lead learns a new desired hash from
// the store before the body it names.
func desiredBodyHere(ts *testServer, col string) string {
	if code, body := ts.api("GET", "/api/v1/agents/"+col+"/config", nil); code == 200 {
		return string(body)
	}
	return ""
}

// startGateways starts a server whose edge fleet is configured with the
// gateway Blueprint that reads the updater's providers, and a token for it.
func startGateways(t *testing.T) (*testServer, createdToken) {
	t.Helper()
	est := newEstate(t)
	est.mkdir("teams/data-flow/blueprints")
	est.write("teams/data-flow/blueprints/gw.yaml", containersBlueprint)
	est.write("fleets/edge.yaml", "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: data-flow/gw\n")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	tok := ts.createToken("edge", nil)
	return ts, tok
}

// The linked updater's providers feed the collector's render: a receiver
// per container, its context variables, and a re-render when they change.
func TestHostContextFollowsTheUpdater(t *testing.T) {
	ts, tok := startGateways(t)
	col := ts.startConfigCollector(tok.Token, "s1")
	a := ts.waitAgent(col.uid, "in sync on attributes alone", syncState(configs.SyncInSync))
	if as := assignmentOf(t, a); deref(as.Context) != configs.ContextAttributes {
		t.Fatalf("context %q", deref(as.Context))
	}
	if body := desiredBody(t, ts, col.uid.String()); strings.Contains(body, "filelog") || !strings.Contains(body, `verbosity: "basic"`) {
		t.Fatalf("without an updater:\n%s", body)
	}

	upd := ts.startUpdater(tok.Token, col.uid, "h-s1", "binary")
	ts.waitAgent(col.uid, "linked", func(a admin.Agent) bool { return pairingOf(a)["state"] == "linked" })
	upd.sendSnapshot(snapshot(1, "c1", "c2"))
	a = ts.waitAgent(col.uid, "rendered with the updater's providers", func(a admin.Agent) bool {
		as := assignmentOf(t, a)
		return deref(as.Context) == configs.ContextAttributesUpdater && as.SyncState == configs.SyncInSync
	})
	body := desiredBody(t, ts, col.uid.String())
	for _, want := range []string{"filelog/files-c1:", "filelog/files-c2:", "/var/lib/docker/containers/c2/c2-json.log",
		"resource/files-c1:", "logs/files-c2:", `verbosity: "detailed"`} {
		if !strings.Contains(body, want) {
			t.Fatalf("desired config lacks %q:\n%s", want, body)
		}
	}
	var doc configrender.Document
	ts.getJSON("/api/v1/agents/"+col.uid.String()+"/context", &doc)
	if doc.Source != configs.ContextAttributesUpdater || doc.Context["local.verbosity"] != "detailed" || doc.Context["host.ip.0"] != "10.0.0.1" ||
		doc.Context["site.id"] != "s1" || len(doc.Dynamic["docker"]) != 2 || doc.Dynamic["docker"][0].Vars["docker.container.name"] != "name-c1" {
		t.Fatalf("context document %+v", doc)
	}

	// A container stops: its copy goes.
	upd.sendSnapshot(snapshot(2, "c1"))
	testkit.WaitFor(t, "c2's receiver to go", func() bool { return !strings.Contains(desiredBody(t, ts, col.uid.String()), "files-c2") })

	// The attribute view wins over the updater on equal keys: host.name is the collector's own.
	if doc.Context["host.name"] != "h-s1" {
		t.Fatalf("host.name %q", doc.Context["host.name"])
	}

	// Bad input changes nothing but an event on the sender. (One at a
	// time: a snapshot that comes within a second of the last one waits,
	// and a newer one replaces it unread.)
	before := desiredBody(t, ts, col.uid.String())
	for i, bad := range []struct{ typ, data string }{
		{hostcontext.MessageType, `{"context": `},
		{hostcontext.MessageType, `{"context": {"Bad Name": {"x": 1}}}`},
		{hostcontext.MessageType, `{"pad": "` + strings.Repeat("x", hostcontext.MaxSnapshot) + `"}`},
		{hostcontext.MessageType, `{"context": {"labels": {"tier": "gold"}}}`},
		{"other", `{}`},
	} {
		upd.sendRaw(bad.typ, []byte(bad.data))
		testkit.WaitFor(t, fmt.Sprintf("refusal %d", i+1), func() bool {
			a, _ := ts.agent(upd.uid)
			n := 0
			for _, ev := range a.Events {
				if ev.Type == hostcontext.EventRefused || ev.Type == hostcontext.EventIgnored {
					n++
				}
			}
			return n >= i+1
		})
	}
	if after := desiredBody(t, ts, col.uid.String()); after != before {
		t.Fatalf("a refused snapshot changed the configuration:\n%s", after)
	}

	// A flood: the newest snapshot wins, applied at most once a second.
	for i := 3; i < 23; i++ {
		ids := []string{"c1"}
		if i == 22 {
			ids = []string{"c9"}
		}
		upd.sendSnapshot(snapshot(i, ids...))
	}
	testkit.WaitFor(t, "the newest snapshot of the flood", func() bool {
		b := desiredBody(t, ts, col.uid.String())
		return strings.Contains(b, "files-c9") && !strings.Contains(b, "files-c1:")
	})
}

// Bounds: a snapshot over the mapping bound, and over what the server
// keeps per updater, is cut and the cuts counted; a collector's snapshot
// is ignored.
func TestHostContextBounds(t *testing.T) {
	ts := startServer(t)
	tok := ts.createToken("edge", nil)
	col := ts.startConfigCollector(tok.Token, "s1")
	upd := ts.startUpdater(tok.Token, col.uid, "h-s1", "binary")
	ts.waitAgent(col.uid, "linked", func(a admin.Agent) bool { return pairingOf(a)["state"] == "linked" })
	var ids []string
	for i := range 1500 {
		ids = append(ids, fmt.Sprintf("c%04d", i))
	}
	upd.sendSnapshot(snapshot(1, ids...))
	testkit.WaitFor(t, "the truncation event", func() bool {
		a, _ := ts.agent(upd.uid)
		ev, ok := hasEvent(a, hostcontext.EventTruncated)
		return ok && strings.Contains(ev.Message, "mappings over 1000: 500") &&
			strings.Contains(ev.Message, "mappings over the 64 KiB kept per updater: ")
	})
	var doc configrender.Document
	testkit.WaitFor(t, "the bounded snapshot", func() bool {
		ts.getJSON("/api/v1/agents/"+col.uid.String()+"/context", &doc)
		return len(doc.Dynamic["docker"]) > 0
	})
	if s, _ := ts.HostContexts().Get(upd.uid); len(s.Encode()) > hostcontext.MaxStoredJSON || len(doc.Dynamic["docker"]) >= hostcontext.MaxMappings ||
		doc.Dynamic["docker"][0].ID != "c0000" {
		t.Fatalf("kept %d mappings from %s in %d bytes", len(doc.Dynamic["docker"]), doc.Dynamic["docker"][0].ID, len(s.Encode()))
	}
	// The collector itself has no business sending providers.
	colAsUpdater := &fakeUpdater{t: t, uid: col.uid, client: col.c}
	colAsUpdater.sendSnapshot(snapshot(1, "x"))
	ts.waitAgent(col.uid, "ignored", func(a admin.Agent) bool { _, ok := hasEvent(a, hostcontext.EventIgnored); return ok })
}

// A snapshot from an updater no collector is linked to is kept, and an
// event says nothing reads it yet.
func TestHostContextUnlinkedUpdater(t *testing.T) {
	ts := startServer(t)
	tok := ts.createToken("edge", nil)
	upd := ts.startUpdater(tok.Token, newUID(t), "h-nowhere", "binary")
	ts.waitAgent(upd.uid, "online", func(a admin.Agent) bool { return a.Online })
	upd.sendSnapshot(snapshot(1, "c1"))
	a := ts.waitAgent(upd.uid, "the unlinked event", func(a admin.Agent) bool {
		ev, ok := hasEvent(a, hostcontext.EventIgnored)
		return ok && strings.Contains(ev.Message, "no collector is linked")
	})
	if s, ok := ts.HostContexts().Get(upd.uid); !ok || len(s.Dynamic["docker"]) != 1 {
		t.Fatalf("snapshot not kept: %v %+v (events %v)", ok, s, a.Events)
	}
}

// Types survive substitution: a provider's number and boolean stay typed
// where they are plain whole values; a string — a provider's that looks
// like a number, a token label "1" — stays a string.
func TestHostContextTypes(t *testing.T) {
	est := newEstate(t)
	est.mkdir("teams/data-flow/blueprints")
	est.write("teams/data-flow/blueprints/gw.yaml", `name: gw
version: 1
owner: data-flow-owners
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
  - name: tag
    class: processor
    type: resource
    version: 1
    config:
      attributes:
        - key: port
          value: ${local.port}
          action: upsert
        - key: tier
          value: ${local.tier}
          action: upsert
        - key: sampled
          value: ${local.sampled}
          action: upsert
        - key: wave
          value: ${labels.wave}
          action: upsert
        - key: port_text
          value: "port ${local.port}"
          action: upsert
  - name: out
    class: exporter
    type: debug
    version: 1
pipelines:
  logs:
    - component: in
    - component: tag
    - component: out
`)
	est.write("fleets/edge.yaml", "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: data-flow/gw\n")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	tok := ts.createToken("edge", map[string]string{"wave": "1"})
	col := ts.startConfigCollector(tok.Token, "s1")
	upd := ts.startUpdater(tok.Token, col.uid, "h-s1", "binary")
	ts.waitAgent(col.uid, "linked", func(a admin.Agent) bool { return pairingOf(a)["state"] == "linked" })
	upd.sendSnapshot(map[string]any{"seq": 1, "context": map[string]any{"local": map[string]any{"port": 4318, "tier": "1", "sampled": true}}})
	ts.waitAgent(col.uid, "rendered with the updater's providers", func(a admin.Agent) bool {
		return deref(assignmentOf(t, a).Context) == configs.ContextAttributesUpdater && assignmentOf(t, a).SyncState == configs.SyncInSync
	})
	body := desiredBody(t, ts, col.uid.String())
	var doc struct {
		Processors map[string]struct {
			Attributes []map[string]any `yaml:"attributes"`
		} `yaml:"processors"`
	}
	if err := yaml.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, a := range doc.Processors["resource/tag"].Attributes {
		got[a["key"].(string)] = a["value"]
	}
	want := map[string]any{"port": 4318, "tier": "1", "sampled": true, "wave": "1", "port_text": "port 4318"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v\n%s", k, got[k], v, body)
		}
	}
	var ctxDoc configrender.Document
	ts.getJSON("/api/v1/agents/"+col.uid.String()+"/context", &ctxDoc)
	if ctxDoc.Types["local.port"] != "number" || ctxDoc.Types["local.sampled"] != "bool" || ctxDoc.Types["local.tier"] != "" {
		t.Fatalf("context types %v", ctxDoc.Types)
	}
}

// A host whose updater and collector restart together, the updater with
// new providers: the collector ends up rendered with them, whatever the
// order in which the snapshots, the disconnects and the reconnects reach
// the server.
func TestHostContextAcrossRestarts(t *testing.T) {
	ts, tok := startGateways(t)
	withVerbosity := func(seq int, v string, containers ...string) map[string]any {
		s := snapshot(seq, containers...)
		s["context"].(map[string]any)["local"] = map[string]any{"verbosity": v}
		return s
	}
	for i, order := range []string{"updater first", "collector first", "collector later"} {
		col := ts.startConfigCollector(tok.Token, fmt.Sprintf("r%d", i))
		upd := ts.startUpdater(tok.Token, col.uid, fmt.Sprintf("h-r%d", i), "binary")
		ts.waitAgent(col.uid, "linked", func(a admin.Agent) bool { return pairingOf(a)["state"] == "linked" })
		upd.sendSnapshot(withVerbosity(1, "gold", "c1", "c2"))
		upd.sendSnapshot(withVerbosity(2, "gold", "c1")) // within a second: waits, then is taken
		ts.waitAgent(col.uid, order+": rendered with gold and one container", func(a admin.Agent) bool {
			body := desiredBody(t, ts, col.uid.String())
			return assignmentOf(t, a).SyncState == configs.SyncInSync && strings.Contains(body, `verbosity: "gold"`) &&
				strings.Contains(body, "files-c1") && !strings.Contains(body, "files-c2")
		})
		upd.stop()
		col.c.Stop(context.Background())
		restartCollector := func() {
			saved := newUIDOverride
			newUIDOverride = &col.uid
			defer func() { newUIDOverride = saved }()
			col = ts.startConfigCollector(tok.Token, fmt.Sprintf("r%d", i))
		}
		if order == "collector first" {
			restartCollector()
		}
		upd = ts.startUpdaterWithUID(tok.Token, col.uid, fmt.Sprintf("h-r%d", i), upd.uid)
		upd.sendSnapshot(withVerbosity(3, "silver", "c1"))
		if order == "updater first" {
			restartCollector()
		}
		if order == "collector later" {
			testkit.WaitFor(t, "the new snapshot taken", func() bool {
				s, ok := ts.HostContexts().Get(upd.uid)
				return ok && s.Context["local.verbosity"] == "silver"
			})
			restartCollector()
		}
		testkit.WaitWithin(t, 15*time.Second, order+": rendered with silver", func() bool {
			return strings.Contains(desiredBody(t, ts, col.uid.String()), `verbosity: "silver"`)
		})
	}
}
