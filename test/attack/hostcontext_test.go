//go:build linux

package attack

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// The estate of the configuration attacks: one fleet whose Blueprint
// renders a receiver per Docker container of the collector's host.
var dockerEstate = map[string]string{
	"teams/data-flow/blueprints/gw.yaml": `name: gw
version: 1
owner: data-flow-owners
components:
  - name: files
    class: receiver
    type: filelog
    version: 1
    config:
      include: ["${docker.paths.log}"]
  - name: in
    class: receiver
    type: otlp
    version: 1
  - name: site
    class: receiver
    type: filelog
    version: 1
    config:
      include: ["/var/log/sites/${site.id}.log"]
  - name: out
    class: exporter
    type: debug
    version: 1
pipelines:
  logs:
    - component: files
    - component: in
    - component: site
    - component: out
`,
	"fleets/edge.yaml": "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: data-flow/gw\n",
}

const providersCapability = "dev.myriarch.providers"

// updaterHello is the first message of an updater on host that claims
// collector (uuid.Nil: none).
func updaterHello(uid, collector uuid.UUID, host string) *protobufs.AgentToServer {
	nonID := []*protobufs.KeyValue{testkit.KV("host.name", host), testkit.KV("dev.myriarch.install.mode", "binary")}
	if collector != uuid.Nil {
		nonID = append(nonID, testkit.KV("dev.myriarch.collector.instance_uid", collector.String()))
	}
	return &protobufs.AgentToServer{InstanceUid: uid[:],
		Capabilities: uint64(protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus | protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages),
		AgentDescription: &protobufs.AgentDescription{
			IdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("service.name", "myriarch-updater"), testkit.KV("service.version", "0.1.0"),
				testkit.KV("service.instance.id", uid.String())},
			NonIdentifyingAttributes: nonID},
		CustomCapabilities: &protobufs.CustomCapabilities{Capabilities: []string{providersCapability}}}
}

// collectorHello is the first message of a collector of the edge fleet.
func collectorHello(uid uuid.UUID, host, site string) *protobufs.AgentToServer {
	return &protobufs.AgentToServer{InstanceUid: uid[:],
		Capabilities: uint64(protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
			protobufs.AgentCapabilities_AgentCapabilities_ReportsRemoteConfig | protobufs.AgentCapabilities_AgentCapabilities_ReportsEffectiveConfig),
		AgentDescription: &protobufs.AgentDescription{
			IdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("service.name", "otelcol-contrib"), testkit.KV("service.version", "0.149.0"),
				testkit.KV("service.instance.id", uid.String())},
			NonIdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("host.name", host), testkit.KV("site.type", "edge"), testkit.KV("site.id", site)}}}
}

// snapshotMessage carries one providers snapshot.
func snapshotMessage(uid uuid.UUID, seq uint64, data []byte) *protobufs.AgentToServer {
	return &protobufs.AgentToServer{InstanceUid: uid[:], SequenceNum: seq,
		CustomMessage: &protobufs.CustomMessage{Capability: providersCapability, Type: "snapshot", Data: data}}
}

// victim is a collector of another site, connected over WebSocket, whose
// site changes again and again: it measures how long a collector waits for
// the configuration a change of its own gives it, the time other agents'
// renders and reports may hold up what the server does for everyone else.
type victim struct {
	t     *testing.T
	a     *wsAgent
	uid   uuid.UUID
	seq   uint64
	last  string // hash of the configuration last received
	n     int
	worst time.Duration
}

// newVictim connects a collector with token and waits for its first
// configuration.
func newVictim(t *testing.T, d *daemon, token string) *victim {
	t.Helper()
	v := &victim{t: t, a: mustWS(t, d, token), uid: uuid.New()}
	v.change()
	return v
}

// change moves the victim to a new site and returns how long it waited for
// the configuration that follows.
func (v *victim) change() time.Duration {
	v.t.Helper()
	m := collectorHello(v.uid, "victim", fmt.Sprintf("v-%d", v.seq))
	m.SequenceNum = v.seq
	v.seq++
	start := time.Now()
	if err := v.a.send(m); err != nil {
		v.t.Fatal(err)
	}
	for {
		r, err := v.a.recv(30 * time.Second)
		if err != nil {
			v.t.Fatalf("the victim collector got no configuration: %v", err)
		}
		if rc := r.GetRemoteConfig(); rc != nil && fmt.Sprintf("%x", rc.ConfigHash) != v.last {
			v.last = fmt.Sprintf("%x", rc.ConfigHash)
			el := time.Since(start)
			v.n, v.worst = v.n+1, max(v.worst, el)
			return el
		}
	}
}

// during changes the victim's site every 50 ms while attack runs, and once
// more after it; it returns the longest it waited.
func (v *victim) during(attack func()) time.Duration {
	v.t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	var worst time.Duration
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			worst = max(worst, v.change())
		}
	})
	attack()
	close(done)
	wg.Wait()
	return max(worst, v.change())
}

// cpuSeconds is the CPU time the server has used.
func (d *daemon) cpuSeconds() float64 {
	d.t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.cmd.Process.Pid))
	if err != nil {
		d.t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

// treeSnapshot is the snapshot: one mapping whose processor holds
// a JSON tree of n empty objects (about 3 bytes each).
func treeSnapshot(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"dynamic": {"docker": [{"id": "a", "mapping": {"paths": {"log": "/l"}}, "processors": [{"transform": {"x": [`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("{}")
	}
	b.WriteString(`]}}]}]}}`)
	return []byte(b.String())
}

// fullSnapshot is the largest snapshot the server keeps for one updater:
// 16 context providers of 256 keys with 16-byte values (more than the
// 64 KiB kept), and mappings with an add_fields processor each.
func fullSnapshot() []byte {
	ctx := map[string]any{}
	for p := range 16 {
		obj := map[string]any{}
		for k := range 256 {
			obj[fmt.Sprintf("k%03d", k)] = strings.Repeat("v", 16)
		}
		ctx[fmt.Sprintf("p%02d", p)] = obj
	}
	var ms []any
	for i := range 1000 {
		id := fmt.Sprintf("c%04d", i)
		ms = append(ms, map[string]any{"id": id, "mapping": map[string]any{"paths": map[string]any{"log": "/var/log/" + id}},
			"processors": []any{map[string]any{"add_fields": map[string]any{"target": "container", "fields": map[string]any{"name": id}}}}})
	}
	b, _ := json.Marshal(map[string]any{"context": ctx, "dynamic": map[string]any{"docker": ms}})
	return b
}

// TestProvidersSnapshots: what hostile updaters send as providers
// snapshots is bounded in what the server parses and keeps: trees of
// hundreds of thousands of values and tens of thousands of providers are
// refused before they are decoded; what is kept is at most 64 KiB of
// variables per updater, also after a restart; a flood of snapshots from
// one updater is taken at most once a second; and a collector connecting
// meanwhile gets its configuration as quickly as ever.
func TestProvidersSnapshots(t *testing.T) {
	t.Parallel()
	d := startDaemonWithEstate(t, dockerEstate)
	_, secret := d.token("site")
	heap0, rss0 := d.heapAfterGC(), d.rss()

	// 25 updaters no collector is linked to, 1 MiB of JSON tree each.
	tree := treeSnapshot(340000)
	if len(tree) > 1<<20 {
		tree = treeSnapshot((1<<20 - 200) / 3)
	}
	var trees []uuid.UUID
	for i := range 25 {
		uid := uuid.New()
		trees = append(trees, uid)
		m := updaterHello(uid, uuid.Nil, fmt.Sprintf("tree-%02d", i))
		m.CustomMessage = &protobufs.CustomMessage{Capability: providersCapability, Type: "snapshot", Data: tree}
		if code, resp := pollHTTP(t, d, secret, m); code != 200 || resp.ErrorResponse != nil {
			t.Fatalf("tree snapshot: %d %v", code, resp.ErrorResponse)
		}
	}
	// One updater with 61 830 context providers of one key each.
	var many strings.Builder
	many.WriteString(`{"context": {`)
	for i := range 61830 {
		if i > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `"p%d": {"k": 1}`, i)
	}
	many.WriteString(`}}`)
	manyUID := uuid.New()
	m := updaterHello(manyUID, uuid.Nil, "many")
	m.CustomMessage = &protobufs.CustomMessage{Capability: providersCapability, Type: "snapshot", Data: []byte(many.String())}
	pollHTTP(t, d, secret, m)
	for _, uid := range append(trees[:1], manyUID) {
		a, _ := d.agent(uid.String())
		if !has(fmtEvents(a), "providers_refused") {
			t.Fatalf("%s: no refusal: %s", uid, fmtEvents(a))
		}
	}
	heap := d.heapAfterGC() - heap0
	figure(t, "25 unlinked updaters with a 1 MiB JSON-tree snapshot and one with 61 830 providers: live heap %+.1f MiB, RSS %s → %s",
		float64(heap)/(1<<20), mib(rss0), mib(d.rss()))
	if heap > 4<<20 {
		t.Errorf("refused snapshots grew the live heap by %s", mib(heap))
	}

	// 1 000 updaters each keeping the most the server keeps.
	full := fullSnapshot()
	if len(full) > 1<<20 {
		t.Fatalf("the full snapshot is %d bytes, over the wire's 1 MiB", len(full))
	}
	heap1 := d.heapAfterGC()
	_, secret2 := d.token("site-2")
	for i := range 1000 {
		tok := secret
		if i >= 500 {
			tok = secret2 // 1 000 new agents a minute per token at most
		}
		m := updaterHello(uuid.New(), uuid.Nil, fmt.Sprintf("full-%04d", i))
		m.CustomMessage = &protobufs.CustomMessage{Capability: providersCapability, Type: "snapshot", Data: full}
		if code, resp := pollHTTP(t, d, tok, m); code != 200 || resp.ErrorResponse != nil {
			t.Fatalf("full snapshot %d: %d %v", i, code, resp.ErrorResponse)
		}
	}
	perUpdater := (d.heapAfterGC() - heap1) / 1000
	d.restart()
	perAfterRestart := (d.heapAfterGC() - heap0) / 1000
	figure(t, "1 000 updaters each keeping a full snapshot (%d bytes sent, 64 KiB of variables kept): live heap %.0f KiB per updater, %.0f KiB after a restart, RSS %s",
		len(full), float64(perUpdater)/1024, float64(perAfterRestart)/1024, mib(d.rss()))
	if perUpdater > 160<<10 || perAfterRestart > 160<<10 {
		t.Errorf("an updater's kept snapshot costs %d bytes of heap (%d after a restart)", perUpdater, perAfterRestart)
	}

	// A flood from one updater: 30 snapshots of 1 MiB in about 6 s are
	// taken at most once a second; meanwhile collectors are served.
	flooder := uuid.New()
	pollHTTP(t, d, secret, updaterHello(flooder, uuid.Nil, "flooder"))
	big := bigValidSnapshot()
	_, victims := d.token("victims")
	v := newVictim(t, d, victims)
	cpu0 := d.cpuSeconds()
	start := time.Now()
	v.during(func() {
		for i := range 30 {
			pollHTTP(t, d, secret, snapshotMessage(flooder, uint64(i+1), big))
			time.Sleep(200 * time.Millisecond)
		}
	})
	elapsed := time.Since(start)
	cpu := d.cpuSeconds() - cpu0
	a, _ := d.agent(flooder.String())
	taken := strings.Count(fmtEvents(a), "providers_truncated")
	figure(t, "30 snapshots of %.1f MiB from one updater in %s: %d taken, server CPU %.1f s, RSS %s; another collector configured %d times meanwhile, at most in %s",
		float64(len(big))/(1<<20), elapsed.Round(100*time.Millisecond), taken, cpu, mib(d.rss()), v.n, v.worst.Round(time.Millisecond))
	if taken == 0 || float64(taken) > elapsed.Seconds()+2 {
		t.Errorf("%d of 30 snapshots taken in %s, want at most one a second", taken, elapsed)
	}
}

// bigValidSnapshot is a snapshot of about 1 MiB that the server reads
// (and cuts to what it keeps): 1 000 mappings with 900-byte values.
func bigValidSnapshot() []byte {
	var ms []any
	for i := range 1000 {
		id := fmt.Sprintf("c%04d", i)
		ms = append(ms, map[string]any{"id": id, "mapping": map[string]any{"paths": map[string]any{"log": "/var/log/" + id}, "pad": strings.Repeat("p", 900)}})
	}
	b, _ := json.Marshal(map[string]any{"dynamic": map[string]any{"docker": ms}})
	return b
}
