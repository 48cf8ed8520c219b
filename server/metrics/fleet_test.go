package metrics_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/offers"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/store"
)

// memStore hands out a prepared set of agents and keeps state in memory;
// writes are dropped: the fixtures measure sampling, not SQLite.
type memStore struct {
	agents []store.Agent
	mu     sync.Mutex
	state  map[string][]byte
}

func (m *memStore) LoadAgents(context.Context, int) ([]store.Agent, map[[16]byte][]store.Event, error) {
	return m.agents, nil, nil
}
func (m *memStore) Write(context.Context, store.Batch) error { return nil }
func (m *memStore) PutState(_ context.Context, k string, v []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state[k] = v
	return nil
}
func (m *memStore) GetState(_ context.Context, k string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.state[k]; ok {
		return v, nil
	}
	return nil, store.ErrNotFound
}
func (m *memStore) DeleteState(_ context.Context, k string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.state, k)
	return nil
}
func (m *memStore) ListState(_ context.Context, prefix string) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range m.state {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out, nil
}

type noTokens struct{}

func (noTokens) TokenName(string) string              { return "edge" }
func (noTokens) TokenLabels(string) map[string]string { return nil }

type nopSender struct{}

func (nopSender) Send(uuid.UUID, *protobufs.ServerToAgent) bool { return true }

// fleet is a registry and an offers engine wired as myriarchd wires them,
// loaded with collector/updater pairs.
type fleet struct {
	reg *registry.Registry
	eng *offers.Engine
}

func (f *fleet) close() {
	f.eng.Close()
	f.reg.Close()
}

func edgeEstate(target string) *estate.Estate {
	pkgs := map[string][]estate.PackageVersion{}
	for _, v := range []string{"0.149.0", "0.149.1"} {
		pkgs["otelcol-contrib"] = append(pkgs["otelcol-contrib"], estate.PackageVersion{Name: "otelcol-contrib", Version: v,
			Artifacts: []estate.Artifact{{OS: "linux", Arch: "amd64", URL: "https://mirror.example/otelcol_" + v + ".tar.gz",
				SHA256: strings.Repeat("ab", 32), Executable: "otelcol-contrib"}}})
	}
	return &estate.Estate{Packages: pkgs, Fleets: []estate.Fleet{{Name: "edge", Priority: 10,
		Selector: map[string]string{"site.type": "edge"}, Package: "otelcol-contrib", TargetVersion: target}}}
}

// newFleet loads pairs collector/updater pairs from the store, as at
// myriarchd's start: a tenth of the collectors on the target 0.149.1, the
// rest on 0.149.0, the updaters on 0.1.0.
func newFleet(tb testing.TB, pairs int) *fleet {
	tb.Helper()
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	cred := store.Credential{Kind: "token", ID: "tok-1"}
	now := time.Now()
	st := &memStore{state: map[string][]byte{}}
	for i := range pairs {
		col, upd := uuid.New(), uuid.New()
		host := fmt.Sprintf("host-%06d", i)
		version := "0.149.0"
		if i%10 == 0 {
			version = "0.149.1"
		}
		colDesc, _ := proto.Marshal(&protobufs.AgentDescription{
			IdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("service.name", "otelcol-contrib"), testkit.KV("service.version", version),
				testkit.KV("service.instance.id", col.String())},
			NonIdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("host.name", host), testkit.KV("os.type", "linux"), testkit.KV("host.arch", "amd64"),
				testkit.KV("site.type", "edge")},
		})
		updDesc, _ := proto.Marshal(&protobufs.AgentDescription{
			IdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("service.name", "myriarch-updater"), testkit.KV("service.version", "0.1.0"),
				testkit.KV("service.instance.id", upd.String())},
			NonIdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("host.name", host), testkit.KV("os.type", "linux"), testkit.KV("host.arch", "amd64"),
				testkit.KV("dev.myriarch.collector.instance_uid", col.String()), testkit.KV("dev.myriarch.install.mode", "binary")},
		})
		st.agents = append(st.agents,
			store.Agent{UID: col, Credential: cred, Kind: string(registry.KindCollector), Description: colDesc,
				Capabilities: uint64(protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig),
				FirstSeen:    now, LastSeen: now},
			store.Agent{UID: upd, Credential: cred, Kind: string(registry.KindUpdater), Description: updDesc,
				Capabilities: uint64(protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus | protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages),
				FirstSeen:    now, LastSeen: now})
	}
	reg, err := registry.Load(ctx, st, noTokens{}, log, registry.Options{FlushInterval: time.Hour, SeenInterval: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	eng, err := offers.New(ctx, reg, st, nopSender{}, log, offers.Options{
		BaseURL: func() string { return "http://127.0.0.1:4320" }, Estate: edgeEstate("0.149.1")})
	if err != nil {
		reg.Close()
		tb.Fatal(err)
	}
	return &fleet{reg: reg, eng: eng}
}
