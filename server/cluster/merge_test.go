package cluster

import (
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

// heldSource reads agents from a real store; a full read hands back what
// it read only when released, as a slow read of a whole estate does.
type heldSource struct {
	Source // only the agent reads below are used
	db     *sqlite.DB
	read   chan struct{} // closed once the full read has read
	hold   chan struct{} // closed to let it return
}

func (s *heldSource) LoadAgents(ctx context.Context, keep int) ([]store.Agent, map[[16]byte][]store.Event, error) {
	recs, events, err := s.db.LoadAgents(ctx, keep)
	close(s.read)
	<-s.hold
	return recs, events, err
}

func (s *heldSource) LoadAgentsByUID(ctx context.Context, uids [][16]byte, keep int) ([]store.Agent, map[[16]byte][]store.Event, error) {
	recs, events, err := s.db.LoadAgents(ctx, keep)
	var out []store.Agent
	for _, r := range recs {
		if slices.Contains(uids, r.UID) {
			out = append(out, r)
		}
	}
	return out, events, err
}

func openRegistry(t *testing.T) (*registry.Registry, *sqlite.DB) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Load(context.Background(), db, nil, slog.New(slog.DiscardHandler), registry.Options{FlushInterval: time.Hour, SeenInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(); db.Close() })
	return reg, db
}

func reportVersion(t *testing.T, reg *registry.Registry, uid uuid.UUID, version string) {
	t.Helper()
	str := func(k, v string) *protobufs.KeyValue {
		return &protobufs.KeyValue{Key: k, Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: v}}}
	}
	msg := &protobufs.AgentToServer{Capabilities: uint64(protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus), AgentDescription: &protobufs.AgentDescription{
		IdentifyingAttributes:    []*protobufs.KeyValue{str("service.name", "otelcol-contrib"), str("service.version", version)},
		NonIdentifyingAttributes: []*protobufs.KeyValue{str("host.name", "h1")},
	}}
	if _, err := reg.Report(uid, store.Credential{Kind: "token", ID: "t"}, msg, true, false); err != nil {
		t.Fatal(err)
	}
	if err := reg.Flush(); err != nil {
		t.Fatal(err)
	}
}

// An instance taking over the decisions reads every agent; a change
// another instance made while that read was under way is not undone by
// it: the collector keeps the version it reported last.
func TestTakeoverReadDoesNotUndoChangesMergedMeanwhile(t *testing.T) {
	other, db := openRegistry(t) // the instance the collector is connected to
	here, _ := openRegistry(t)
	src := &heldSource{db: db, read: make(chan struct{}), hold: make(chan struct{})}
	s := NewSync(src, here, nil, nil, SyncOptions{Lease: time.Minute})
	col := uuid.New()
	changed := Change{Kind: KindAgents, IDs: []string{hex.EncodeToString(col[:])}}

	reportVersion(t, other, col, "0.149.0")
	s.Handle(changed)

	caught := make(chan error, 1)
	go func() { _, err := s.catchUp(context.Background()); caught <- err }()
	<-src.read // it read the collector on 0.149.0
	reportVersion(t, other, col, "0.149.1")
	handled := make(chan struct{})
	go func() { s.Handle(changed); close(handled) }()
	// Merged in any order, the change would be applied now, before the
	// takeover's read returns; in order it waits for it. The outcome
	// checked below does not depend on how long this waits.
	select {
	case <-handled:
	case <-time.After(500 * time.Millisecond):
	}
	close(src.hold)
	if err := <-caught; err != nil {
		t.Fatal(err)
	}
	<-handled

	a, ok := here.Peek(col)
	if !ok || a.Identifying.Value("service.version") != "0.149.1" {
		t.Fatalf("after the takeover's read the collector shows %q, want the 0.149.1 it reported last", a.Identifying.Value("service.version"))
	}
}

// chunkSource records how many agents each read names.
type chunkSource struct {
	Source
	sizes []int
	// took, when set, is how long each read takes (a busy store, or a busy
	// instance merging the chunk before).
	took time.Duration
}

func (s *chunkSource) LoadAgentsByUID(ctx context.Context, uids [][16]byte, _ int) ([]store.Agent, map[[16]byte][]store.Event, error) {
	select {
	case <-time.After(s.took):
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	s.sizes = append(s.sizes, len(uids))
	return nil, nil, nil
}

// Each read of a change has a budget of its own: a backlog whose chunks
// together take longer than one budget is applied, not cut short and read
// again in full (which, on a busy instance, could fail the same way).
func TestEachChunkHasItsOwnReadBudget(t *testing.T) {
	reg, _ := openRegistry(t)
	const budget = 300 * time.Millisecond
	src := &chunkSource{took: budget / 2}
	s := NewSync(src, reg, nil, nil, SyncOptions{Lease: time.Minute, ReadBudget: budget})
	var ids []string
	for range 4 * mergeChunk {
		u := uuid.New()
		ids = append(ids, hex.EncodeToString(u[:]))
	}
	if err := s.Handle(Change{Kind: KindAgents, IDs: ids}); err != nil {
		t.Fatalf("four reads of half a budget each: %v", err)
	}
	if want := []int{mergeChunk, mergeChunk, mergeChunk, mergeChunk}; !slices.Equal(src.sizes, want) {
		t.Fatalf("reads named %v agents, want %v", src.sizes, want)
	}
	// One read past its budget still fails the change, to be read again.
	src.took, src.sizes = 10*budget, nil
	if err := s.Handle(Change{Kind: KindAgents, IDs: ids[:1]}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read past its budget: %v, want the deadline's error", err)
	}
}

// A change naming many agents (a backlog coalesced) is read and merged a
// chunk at a time, so an instance holds a chunk's rows at once.
func TestManyAgentsAreMergedInChunks(t *testing.T) {
	reg, _ := openRegistry(t)
	src := &chunkSource{}
	s := NewSync(src, reg, nil, nil, SyncOptions{Lease: time.Minute})
	var ids []string
	for range 2*mergeChunk + 500 {
		u := uuid.New()
		ids = append(ids, hex.EncodeToString(u[:]))
	}
	if err := s.Handle(Change{Kind: KindAgents, IDs: ids}); err != nil {
		t.Fatal(err)
	}
	if want := []int{mergeChunk, mergeChunk, 500}; !slices.Equal(src.sizes, want) {
		t.Fatalf("reads named %v agents, want %v", src.sizes, want)
	}
}

// A resync reads every agent but merges only those whose row changed:
// what follows a merge (pairing, offers, configuration) is not redone for
// the whole estate each time an instance falls behind.
func TestAResyncMergesOnlyWhatChanged(t *testing.T) {
	other, db := openRegistry(t)
	here, _ := openRegistry(t)
	var mu sync.Mutex
	seen := map[uuid.UUID]int{}
	here.Observe(func(uid uuid.UUID) { mu.Lock(); seen[uid]++; mu.Unlock() })
	s := NewSync(leadSource{db: db}, here, nil, nil, SyncOptions{Lease: time.Minute})
	uids := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	for _, u := range uids {
		reportVersion(t, other, u, "0.149.0")
	}
	resync := func(want map[uuid.UUID]int) {
		t.Helper()
		mu.Lock()
		clear(seen)
		mu.Unlock()
		if err := s.Handle(Change{Kind: KindAgents, Resync: true}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if !maps.Equal(seen, want) {
			t.Fatalf("a resync merged %v, want %v", seen, want)
		}
	}
	resync(map[uuid.UUID]int{uids[0]: 1, uids[1]: 1, uids[2]: 1})
	resync(map[uuid.UUID]int{})
	reportVersion(t, other, uids[1], "0.149.1")
	resync(map[uuid.UUID]int{uids[1]: 1})
	if a, _ := here.Peek(uids[1]); a.Identifying.Value("service.version") != "0.149.1" {
		t.Fatalf("after the resync the collector shows %q", a.Identifying.Value("service.version"))
	}
}
