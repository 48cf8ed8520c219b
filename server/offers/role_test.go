package offers

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/rollout"
	"github.com/myriarch/myriarch/server/rollout/rollouttest"
	"github.com/myriarch/myriarch/server/store"
)

// sharedStore is what instances share: offer records and server state;
// and, per registry, the reports it wrote.
type sharedStore struct {
	rollouttest.NopStore
	mu      sync.Mutex
	records map[[16]byte][]byte
	state   map[string][]byte
	reports []store.Report
}

func newSharedStore() *sharedStore {
	return &sharedStore{records: map[[16]byte][]byte{}, state: map[string][]byte{}}
}

func (s *sharedStore) LoadOffers(context.Context) (map[[16]byte][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.records), nil
}

func (s *sharedStore) WriteOffers(_ context.Context, recs map[[16]byte][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.Copy(s.records, recs)
	return nil
}

func (s *sharedStore) PutState(_ context.Context, k string, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state[k] = v
	return nil
}

func (s *sharedStore) ListState(context.Context, string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.state), nil
}

func (s *sharedStore) Write(_ context.Context, b store.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reports = append(s.reports, b.Reports...)
	return nil
}

func (s *sharedStore) takeReports() []store.Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reports
	s.reports = nil
	return r
}

type instance struct {
	e   *Engine
	reg *registry.Registry
	snd *rollouttest.CountingSender
}

func newInstance(t *testing.T, st *sharedStore, shared bool) *instance {
	t.Helper()
	reg := rollouttest.Registry(t, st, registry.Options{})
	snd := &rollouttest.CountingSender{}
	e, err := New(context.Background(), reg, st, snd, slog.New(slog.DiscardHandler), Options{BaseURL: func() string { return "http://127.0.0.1:4320" }, Shared: shared})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(); reg.Close() })
	return &instance{e: e, reg: reg, snd: snd}
}

// register reports a collector and its updater to a registry under given UIDs.
func register(reg *registry.Registry, col, upd uuid.UUID, host string) {
	cred := rollouttest.Cred
	reg.Report(col, cred, &protobufs.AgentToServer{Capabilities: uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig), AgentDescription: &protobufs.AgentDescription{
		IdentifyingAttributes:    []*protobufs.KeyValue{testkit.KV("service.name", "otelcol-contrib"), testkit.KV("service.version", "0.149.0")},
		NonIdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("host.name", host), testkit.KV("os.type", "linux"), testkit.KV("host.arch", "amd64"), testkit.KV("site.type", "edge")},
	}}, false, true)
	reg.Report(upd, cred, &protobufs.AgentToServer{Capabilities: uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages), AgentDescription: &protobufs.AgentDescription{
		IdentifyingAttributes:    []*protobufs.KeyValue{testkit.KV("service.name", "myriarch-updater")},
		NonIdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("host.name", host), testkit.KV("dev.myriarch.install.mode", "binary"), testkit.KV("dev.myriarch.collector.instance_uid", col.String())},
	}}, false, true)
}

func stateOf(e *Engine, col uuid.UUID) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.collectors[col]; c != nil {
		return c.state
	}
	return ""
}

// A follower decides nothing: it shows the leader's records, delivers
// their offers to the updaters connected to it (the same offer the leader
// would make), and reports their statuses, which the leader applies once:
// a report applied before is not applied again (after a retry cleared
// the failure it caused), nor is one older than the last applied.
func TestFollowerDeliversAndReportsLeaderApplies(t *testing.T) {
	st := newSharedStore()
	lead, follow := newInstance(t, st, false), newInstance(t, st, true)
	col, upd := uuid.New(), uuid.New()
	register(lead.reg, col, upd, "h1")
	register(follow.reg, col, upd, "h1") // the updater is connected to the follower
	lead.e.SetEstate(testEstate("0.149.1"))
	follow.e.SetEstate(testEstate("0.149.1"))
	if s := stateOf(follow.e, col); s != "" {
		t.Fatalf("a follower decided: state %q", s)
	}
	lead.e.Flush()
	recs, _ := st.LoadOffers(context.Background())
	follow.e.Mirror(recs)
	if s := stateOf(follow.e, col); s != Offered {
		t.Fatalf("the follower shows %q, want the leader's %q", s, Offered)
	}
	follow.e.mu.Lock()
	offer, want := follow.e.desired[upd], lead.e.desired[upd]
	follow.e.mu.Unlock()
	if offer == nil || want == nil || string(offer.AllPackagesHash) != string(want.AllPackagesHash) {
		t.Fatalf("the follower delivers %v, the leader decided %v", offer, want)
	}
	testkit.WaitFor(t, "the offer pushed by the follower", func() bool { return follow.snd.N.Load() == 1 })
	follow.e.Mirror(recs) // the same record again: not pushed again
	time.Sleep(50 * time.Millisecond)
	if n := follow.snd.N.Load(); n != 1 {
		t.Fatalf("%d pushes for one offer", n)
	}

	pa := offer.Packages["otelcol-contrib"]
	failed := &protobufs.AgentToServer{PackageStatuses: &protobufs.PackageStatuses{ServerProvidedAllPackagesHash: offer.AllPackagesHash,
		Packages: map[string]*protobufs.PackageStatus{"otelcol-contrib": {Name: "otelcol-contrib", ServerOfferedHash: pa.Hash,
			ServerOfferedVersion: pa.Version, Status: protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, ErrorMessage: "boom"}}}}
	follow.e.OnAgentMessage(upd, failed, &protobufs.ServerToAgent{})
	if s := stateOf(follow.e, col); s != Offered {
		t.Fatalf("the follower acted on a status itself: %s", s)
	}
	if err := follow.reg.Flush(); err != nil {
		t.Fatal(err)
	}
	reps := st.takeReports()
	if len(reps) != 1 || reps[0].Feature != ReportFeature || reps[0].UID != upd {
		t.Fatalf("reports written: %+v", reps)
	}
	lead.e.ApplyReports(reps)
	if s := stateOf(lead.e, col); s != Failed {
		t.Fatalf("the leader applied the report as %s, want %s", s, Failed)
	}
	if err := lead.e.Retry(col); err != nil {
		t.Fatal(err)
	}
	lead.e.ApplyReports(reps) // a takeover reading every report again
	older := reps[0]
	older.At = older.At.Add(-time.Second)
	lead.e.ApplyReports([]store.Report{older})
	if s := stateOf(lead.e, col); s != Offered {
		t.Fatalf("after a retry, a report applied before was applied again: %s", s)
	}
}

// A follower whose estate builds another offer than the leader decided
// (it runs another revision) delivers nothing rather than a wrong offer.
func TestFollowerDeliversNoOfferItBuildsDifferently(t *testing.T) {
	st := newSharedStore()
	lead, follow := newInstance(t, st, false), newInstance(t, st, true)
	col, upd := uuid.New(), uuid.New()
	register(lead.reg, col, upd, "h1")
	register(follow.reg, col, upd, "h1")
	lead.e.SetEstate(testEstate("0.149.1"))
	other := testEstate("0.149.1")
	for name, pvs := range other.Packages {
		for i := range pvs {
			pvs[i].Artifacts[0].SHA256 = "ff" + pvs[i].Artifacts[0].SHA256[2:]
		}
		other.Packages[name] = pvs
	}
	follow.e.SetEstate(other)
	lead.e.Flush()
	recs, _ := st.LoadOffers(context.Background())
	follow.e.Mirror(recs)
	follow.e.mu.Lock()
	d := follow.e.desired[upd]
	follow.e.mu.Unlock()
	if d != nil || follow.snd.N.Load() != 0 {
		t.Fatalf("a follower with another estate delivered %v", d)
	}
}

// A follower that learns of a fleet after the leader wrote its rollout
// state (its estate reloaded later than the leader's) shows that state,
// not a rollout starting from nothing.
func TestFollowerTakesTheStateOfAFleetNewToIt(t *testing.T) {
	st := newSharedStore()
	follow := newInstance(t, st, true)
	if err := st.PutState(context.Background(), rolloutKey+"edge", []byte(`{"targetVersion":"0.149.1","paused":true,"failures":1}`)); err != nil {
		t.Fatal(err)
	}
	// The leader's notification of it reaches the follower first.
	if err := follow.e.ReloadState(context.Background()); err != nil {
		t.Fatal(err)
	}
	follow.e.SetEstate(testEstate("0.149.1"))
	follow.e.mu.Lock()
	f := follow.e.fleets["edge"]
	var got rolloutState
	if f != nil {
		got = f.rolloutState
	}
	follow.e.mu.Unlock()
	if want := (rolloutState{Target: "0.149.1", State: rollout.State{Paused: true, Failures: 1}}); got != want {
		t.Fatalf("the follower shows %+v, want the leader's %+v", got, want)
	}
}
