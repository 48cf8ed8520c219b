package admin_test

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

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/credentials"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/offers"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/tokens"
)

// memStore keeps tokens and state in memory and drops agent writes: the
// fixtures measure the API, not SQLite.
type memStore struct {
	mu     sync.Mutex
	tokens []tokens.Token
	state  map[string][]byte
}

func (m *memStore) InsertToken(_ context.Context, t tokens.Token) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens = append(m.tokens, t)
	return nil
}
func (m *memStore) RevokeToken(context.Context, string, time.Time) error { return nil }
func (m *memStore) ListTokens(context.Context) ([]tokens.Token, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]tokens.Token(nil), m.tokens...), nil
}
func (m *memStore) LoadAgents(context.Context, int) ([]store.Agent, map[[16]byte][]store.Event, error) {
	return nil, nil, nil
}
func (m *memStore) Write(context.Context, store.Batch) error { return nil }
func (m *memStore) PutState(_ context.Context, k string, v []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == nil {
		m.state = map[string][]byte{}
	}
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

type nopSender struct{}

func (nopSender) Send(uuid.UUID, *protobufs.ServerToAgent) bool { return true }

// fleet is an admin API wired to a registry and an offers engine as
// myriarchd wires them, filled with collector/updater pairs.
type fleet struct {
	cred       store.Credential
	api        *admin.API
	reg        *registry.Registry
	eng        *offers.Engine
	collectors []uuid.UUID
	updaters   []uuid.UUID
}

func (f *fleet) close() {
	f.eng.Close()
	f.reg.Close()
}

func catalog(target string) *estate.Estate {
	pkgs := map[string][]estate.PackageVersion{}
	for _, v := range []string{"0.149.0", "0.149.1"} {
		pkgs["otelcol-contrib"] = append(pkgs["otelcol-contrib"], estate.PackageVersion{Name: "otelcol-contrib", Version: v,
			Artifacts: []estate.Artifact{{OS: "linux", Arch: "amd64", URL: "https://mirror.example/otelcol_" + v + ".tar.gz",
				SHA256: strings.Repeat("ab", 32), Executable: "otelcol-contrib"}}})
	}
	return &estate.Estate{Packages: pkgs, Fleets: []estate.Fleet{{Name: "edge", Priority: 10,
		Selector: map[string]string{"site.type": "edge"}, Package: "otelcol-contrib", TargetVersion: target}}}
}

// Capability sets and descriptions as test/load's simulated agents report them.
const (
	collectorCaps = uint64(protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus |
		protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsEffectiveConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHeartbeat)
	updaterCaps = uint64(protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus |
		protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsPackageStatuses |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHeartbeat)
)

func collectorDesc(uid uuid.UUID, host, version string, i int) *protobufs.AgentDescription {
	return &protobufs.AgentDescription{
		IdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("service.name", "otelcol-contrib"), testkit.KV("service.version", version),
			testkit.KV("service.instance.id", uid.String())},
		NonIdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("host.name", host), testkit.KV("os.type", "linux"), testkit.KV("host.arch", "amd64"),
			testkit.KV("os.description", "Debian GNU/Linux 13 (trixie)"), testkit.KV("site.type", "edge"),
			testkit.KV("site.name", fmt.Sprintf("site-%03d", i%500)), testkit.KV("site.region", fmt.Sprintf("region-%d", i%7))},
	}
}

func updaterDesc(uid, col uuid.UUID, host string) *protobufs.AgentDescription {
	return &protobufs.AgentDescription{
		IdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("service.name", "myriarch-updater"), testkit.KV("service.version", "0.1.0"),
			testkit.KV("service.instance.id", uid.String())},
		NonIdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("host.name", host), testkit.KV("os.type", "linux"), testkit.KV("host.arch", "amd64"),
			testkit.KV("os.description", "Debian GNU/Linux 13 (trixie)"), testkit.KV("dev.myriarch.collector.instance_uid", col.String()),
			testkit.KV("dev.myriarch.install.mode", "binary")},
	}
}

// newFleet registers pairs collector/updater pairs through the registry
// (the offers engine observing it, as in myriarchd), then walks every pair
// through a rollout so each agent carries the events, pairing, assignment and
// offer a real one has after an upgrade.
func newFleet(tb testing.TB, pairs int) *fleet {
	tb.Helper()
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	st := &memStore{}
	book, err := credentials.Open(ctx, st)
	if err != nil {
		tb.Fatal(err)
	}
	tok, _, err := book.Create(ctx, "edge", map[string]string{"wave": "1"})
	if err != nil {
		tb.Fatal(err)
	}
	reg, err := registry.Load(ctx, st, book, log, registry.Options{FlushInterval: time.Hour, SeenInterval: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	eng, err := offers.New(ctx, reg, st, nopSender{}, log, offers.Options{BaseURL: func() string { return "http://127.0.0.1:4320" }})
	if err != nil {
		tb.Fatal(err)
	}
	api := admin.New(admin.Deps{AdminToken: "adm", Tokens: book, Registry: reg, Log: log})
	eng.Routes(api)
	eng.SetEstate(catalog("0.149.0"))
	f := &fleet{api: api, reg: reg, eng: eng}
	cred := store.Credential{Kind: credentials.KindToken, ID: tok.ID}
	f.cred = cred
	health := func() *protobufs.ComponentHealth {
		return &protobufs.ComponentHealth{Healthy: true, Status: "StatusOK", StartTimeUnixNano: uint64(time.Now().UnixNano())}
	}
	report := func(uid uuid.UUID, seq uint64, m *protobufs.AgentToServer) {
		m.SequenceNum = seq
		if _, err := reg.Report(uid, cred, m, false, seq == 1); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range pairs {
		host := fmt.Sprintf("host-%06d", i)
		col, upd := uuid.New(), uuid.New()
		f.collectors = append(f.collectors, col)
		f.updaters = append(f.updaters, upd)
		report(col, 1, &protobufs.AgentToServer{Capabilities: collectorCaps, AgentDescription: collectorDesc(col, host, "0.149.0", i), Health: health()})
		report(upd, 1, &protobufs.AgentToServer{Capabilities: updaterCaps, AgentDescription: updaterDesc(upd, col, host), Health: health()})
	}
	// The rollout: offered, then the collector comes back on the new version.
	eng.SetEstate(catalog("0.149.1"))
	for i, col := range f.collectors {
		report(col, 2, &protobufs.AgentToServer{Capabilities: collectorCaps,
			AgentDescription: collectorDesc(col, fmt.Sprintf("host-%06d", i), "0.149.1", i), Health: health()})
	}
	return f
}

// poll sends rate heartbeats a second, round robin over the fleet, through
// the registry and the offers hook as opampsrv does, until stop.
func (f *fleet) poll(rate int, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	agents := append(append([]uuid.UUID(nil), f.collectors...), f.updaters...)
	seq := make([]uint64, len(agents))
	for i := range seq {
		seq[i] = 2 // the fixture's collectors sent two messages; a gap only asks for full state
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	next, start, sent := 0, time.Now(), 0
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		for due := int(time.Since(start).Seconds() * float64(rate)); sent < due; sent++ {
			i := next % len(agents)
			next++
			seq[i]++
			msg := &protobufs.AgentToServer{SequenceNum: seq[i]}
			if _, err := f.reg.Report(agents[i], f.cred, msg, true, false); err == nil {
				f.eng.OnAgentMessage(agents[i], msg, &protobufs.ServerToAgent{})
			}
		}
	}
}
