package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/hostcontext"
	"github.com/myriarch/myriarch/server/store"
)

// BenchmarkSnapshotStorm: 10 000 linked updaters (MYRIARCH_BENCH_PAIRS to
// change) each send a new providers snapshot (context and two container
// mappings) within one op, through the OpAMP hook; the op ends when every
// collector's desired configuration reads the new snapshot. Each updater's
// snapshots are at least hostcontext.MinInterval apart (the wait between
// ops is outside the timer).
func BenchmarkSnapshotStorm(b *testing.B) {
	n := envInt(b, "MYRIARCH_BENCH_PAIRS", 10000)
	estateDir := b.TempDir()
	for rel, content := range map[string]string{
		"teams/data-flow/blueprints/gw.yaml": containersBlueprint,
		"fleets/edge.yaml":                   "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: data-flow/gw\n",
	} {
		p := filepath.Join(estateDir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	s, err := server.New(context.Background(), server.Options{DataDir: b.TempDir(), Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		Estate: estateDir, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	cred := store.Credential{Kind: "certificate", ID: "CN=load"}
	report := func(uid uuid.UUID, msg *protobufs.AgentToServer) {
		if _, err := s.Registry().Report(uid, cred, msg, true, false); err != nil {
			b.Fatal(err)
		}
		resp := &protobufs.ServerToAgent{}
		s.Offers().OnAgentMessage(uid, msg, resp)
		s.Configs().OnAgentMessage(uid, msg, resp)
	}
	cols, upds := make([]uuid.UUID, n), make([]uuid.UUID, n)
	for i := range n {
		cols[i], upds[i] = uuid.New(), uuid.New()
		host := fmt.Sprintf("host-%06d", i)
		report(cols[i], &protobufs.AgentToServer{Capabilities: uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
			protobufs.AgentCapabilities_AgentCapabilities_ReportsRemoteConfig), AgentDescription: &protobufs.AgentDescription{
			IdentifyingAttributes:    kvs("service.name", pkgName, "service.version", "0.149.0"),
			NonIdentifyingAttributes: kvs("host.name", host, "site.type", "edge", "site.id", fmt.Sprintf("s%d", i%100)),
		}})
		report(upds[i], &protobufs.AgentToServer{Capabilities: uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages),
			AgentDescription: &protobufs.AgentDescription{
				IdentifyingAttributes:    kvs("service.name", "myriarch-updater", "service.version", "0.1.0"),
				NonIdentifyingAttributes: kvs("host.name", host, "dev.myriarch.collector.instance_uid", cols[i].String()),
			}})
	}
	if _, ok := s.Offers().LinkedUpdater(cols[n-1]); !ok {
		b.Fatal("collector not linked")
	}
	round := 0
	var ms runtime.MemStats
	for b.Loop() {
		b.StopTimer()
		if round > 0 {
			time.Sleep(hostcontext.MinInterval)
		}
		round++
		marker := fmt.Sprintf("round-%d", round)
		msgs := make([]*protobufs.AgentToServer, n)
		for i := range n {
			data, _ := json.Marshal(map[string]any{"seq": round, "context": map[string]any{"local": map[string]any{"verbosity": marker}},
				"dynamic": map[string]any{"docker": []any{
					map[string]any{"id": "a", "mapping": map[string]any{"paths": map[string]any{"log": "/a/" + marker}}},
					map[string]any{"id": "b", "mapping": map[string]any{"paths": map[string]any{"log": "/b"}}}}}})
			msgs[i] = &protobufs.AgentToServer{CustomMessage: &protobufs.CustomMessage{Capability: hostcontext.Capability, Type: hostcontext.MessageType, Data: data}}
		}
		b.StartTimer()
		for i := range n {
			s.HostContexts().OnAgentMessage(upds[i], msgs[i], &protobufs.ServerToAgent{})
		}
		for i := 0; i < n; {
			if _, body := s.Configs().Desired(cols[i]); bytes.Contains(body, []byte(marker)) {
				i++
				continue
			}
			time.Sleep(time.Millisecond)
		}
		b.StopTimer()
		runtime.ReadMemStats(&ms)
		b.StartTimer()
	}
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MB")
}
