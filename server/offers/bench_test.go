package offers

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/rollout/rollouttest"
)

func testEstate(target string) *estate.Estate {
	pkgs := map[string][]estate.PackageVersion{}
	for _, v := range []string{"0.149.0", "0.149.1", "0.149.2"} {
		pkgs["otelcol-contrib"] = append(pkgs["otelcol-contrib"], estate.PackageVersion{Name: "otelcol-contrib", Version: v,
			Artifacts: []estate.Artifact{{OS: "linux", Arch: "amd64", URL: "https://mirror.example/otelcol_" + v + ".tar.gz", SHA256: strings.Repeat("ab", 32), Executable: "otelcol-contrib"}}})
	}
	return &estate.Estate{Packages: pkgs, Fleets: []estate.Fleet{{Name: "edge", Priority: 10,
		Selector: map[string]string{"site.type": "edge"}, Package: "otelcol-contrib", TargetVersion: target}}}
}

// buildPairs registers n linked collector/updater pairs and returns the engine.
func buildPairs(tb testing.TB, n int) (*Engine, *rollouttest.CountingSender, *registry.Registry) {
	reg := rollouttest.Registry(tb, rollouttest.NopStore{}, registry.Options{})
	snd := &rollouttest.CountingSender{}
	e, err := New(context.Background(), reg, rollouttest.NopStore{}, snd, slog.New(slog.DiscardHandler), Options{BaseURL: func() string { return "http://127.0.0.1:4320" }})
	if err != nil {
		tb.Fatal(err)
	}
	e.SetEstate(testEstate("0.149.0"))
	cred := rollouttest.Cred
	colCaps := uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig | protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus)
	updCaps := uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages | protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus)
	for i := range n {
		host := fmt.Sprintf("host-%06d", i)
		col, upd := uuid.New(), uuid.New()
		reg.Report(col, cred, &protobufs.AgentToServer{Capabilities: colCaps, AgentDescription: rollouttest.Description(
			[]string{"service.name=otelcol-contrib", "service.version=0.149.0"},
			"host.name="+host, "os.type=linux", "host.arch=amd64", "site.type=edge")}, false, true)
		reg.Report(upd, cred, &protobufs.AgentToServer{Capabilities: updCaps, AgentDescription: rollouttest.Description(
			[]string{"service.name=myriarch-updater"},
			"host.name="+host, "dev.myriarch.install.mode=binary", "dev.myriarch.collector.instance_uid="+col.String())}, false, true)
	}
	return e, snd, reg
}

// BenchmarkTargetVersionChange measures changing a fleet's targetVersion
// with 10 000 linked pairs: every offer computed and queued.
func BenchmarkTargetVersionChange(b *testing.B) {
	const pairs = 10000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e, _, reg := buildPairs(b, pairs)
	runtime.GC()
	runtime.ReadMemStats(&after)
	defer e.Close()
	defer reg.Close()
	targets := []string{"0.149.1", "0.149.2"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.SetEstate(testEstate(targets[i%2]))
		e.mu.Lock()
		queued := len(e.desired)
		e.mu.Unlock()
		if queued != pairs {
			b.Fatalf("offers queued = %d, want %d", queued, pairs)
		}
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/pairs, "heap-bytes/pair")
}

// TestEveryPairOffered checks the benchmark's premise at a small size.
func TestEveryPairOffered(t *testing.T) {
	e, snd, reg := buildPairs(t, 200)
	defer reg.Close()
	e.SetEstate(testEstate("0.149.1"))
	deadline := time.Now().Add(10 * time.Second)
	for snd.N.Load() < 200 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	e.Close()
	if got := snd.N.Load(); got != 200 {
		t.Fatalf("sent %d offers, want 200", got)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.collectors {
		if c.state != Offered {
			t.Fatalf("collector %s state %s", c.uid, c.state)
		}
	}
}

// A status that arrives after the collector already reports the target
// version (it travels on another connection) must not move the offer back.
func TestLateStatusDoesNotRegressUpToDate(t *testing.T) {
	e, _, reg := buildPairs(t, 1)
	defer reg.Close()
	defer e.Close()
	e.SetEstate(testEstate("0.149.1"))
	var col, upd uuid.UUID
	var offer *protobufs.PackagesAvailable
	e.mu.Lock()
	for uid := range e.collectors {
		col = uid
	}
	for uid, d := range e.desired {
		upd, offer = uid, d
	}
	e.mu.Unlock()
	if offer == nil {
		t.Fatal("no offer made")
	}
	cred := rollouttest.Cred
	reg.Report(col, cred, &protobufs.AgentToServer{SequenceNum: 1, Capabilities: uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig), AgentDescription: &protobufs.AgentDescription{
		IdentifyingAttributes:    []*protobufs.KeyValue{testkit.KV("service.name", "otelcol-contrib"), testkit.KV("service.version", "0.149.1")},
		NonIdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("host.name", "host-000000"), testkit.KV("os.type", "linux"), testkit.KV("host.arch", "amd64"), testkit.KV("site.type", "edge")},
	}}, false, false)
	pa := offer.Packages["otelcol-contrib"]
	late := &protobufs.AgentToServer{PackageStatuses: &protobufs.PackageStatuses{
		ServerProvidedAllPackagesHash: offer.AllPackagesHash,
		Packages: map[string]*protobufs.PackageStatus{"otelcol-contrib": {Name: "otelcol-contrib", ServerOfferedHash: pa.Hash,
			ServerOfferedVersion: pa.Version, Status: protobufs.PackageStatusEnum_PackageStatusEnum_Installing}},
	}}
	e.OnAgentMessage(upd, late, &protobufs.ServerToAgent{})
	e.mu.Lock()
	defer e.mu.Unlock()
	if st := e.collectors[col].state; st != UpToDate {
		t.Fatalf("state after a late Installing status = %s, want %s", st, UpToDate)
	}
}
