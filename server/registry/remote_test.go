package registry

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/server/store"
)

// Merge adds and replaces agents another instance wrote, except one
// connected here; nothing merged is written back; observers hear of each
// merged agent; the lease makes an agent online until it ends.
func TestMergeAndLeases(t *testing.T) {
	now := time.Unix(1700000000, 0).UTC()
	var clock sync.Mutex
	cur := now
	st := &recordingStore{}
	r, err := Load(context.Background(), st, nil, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour, Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return cur }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var told []uuid.UUID
	var toldMu sync.Mutex
	r.Observe(func(u uuid.UUID) { toldMu.Lock(); told = append(told, u); toldMu.Unlock() })

	here := uuid.New()
	cred := store.Credential{Kind: "token", ID: "t1"}
	if _, err := r.Report(here, cred, &protobufs.AgentToServer{AgentDescription: &protobufs.AgentDescription{}, Capabilities: 1}, false, true); err != nil {
		t.Fatal(err)
	}
	r.Flush()
	written, _ := st.rows()

	elsewhere := uuid.New()
	rec := func(uid uuid.UUID, kind string) store.Agent {
		return store.Agent{UID: uid, Credential: cred, Kind: kind, Capabilities: 7, FirstSeen: now, LastSeen: now}
	}
	lease := func(t time.Time) time.Time { return t.Add(3 * time.Second) }
	n := r.Merge([]store.Agent{rec(elsewhere, "collector"), rec(here, "updater")},
		map[[16]byte][]store.Event{elsewhere: {{Seq: 4, Time: now, Type: EventRegistered, Message: "registered"}}}, lease)
	if n != 1 {
		t.Fatalf("merged %d agents, want 1 (the one connected here keeps its record)", n)
	}
	if a, _ := r.Get(here); a.Kind == "updater" {
		t.Fatal("an agent connected here was replaced by another instance's record")
	}
	a, ok := r.Get(elsewhere)
	if !ok || a.Kind != "collector" || !a.Online || len(a.Events) != 1 {
		t.Fatalf("merged agent = %+v", a)
	}
	toldMu.Lock()
	if !slices.Contains(told, elsewhere) {
		t.Fatal("observers were not told of the merged agent")
	}
	toldMu.Unlock()
	r.Flush()
	if w, _ := st.rows(); w != written {
		t.Fatalf("merging wrote %d rows back", w-written)
	}
	// An event added here continues the merged history's numbering.
	r.AddEvent(elsewhere, "t", "next")
	if a, _ := r.Get(elsewhere); a.Events[len(a.Events)-1].Seq != 5 {
		t.Fatalf("next event seq %d, want 5", a.Events[len(a.Events)-1].Seq)
	}

	// The lease: renewed while the database shows it seen, gone when not.
	clock.Lock()
	cur = now.Add(2 * time.Second)
	clock.Unlock()
	r.SeenElsewhere(map[[16]byte]time.Time{elsewhere: now.Add(2 * time.Second)}, nil, lease)
	clock.Lock()
	cur = now.Add(4 * time.Second)
	clock.Unlock()
	if a, _ := r.Peek(elsewhere); !a.Online {
		t.Fatal("offline although its lease was renewed")
	}
	clock.Lock()
	cur = now.Add(10 * time.Second)
	clock.Unlock()
	if a, _ := r.Peek(elsewhere); a.Online {
		t.Fatal("online after its lease ended")
	}
	r.SeenElsewhere(map[[16]byte]time.Time{}, nil, lease)
	if a, _ := r.Peek(here); !a.Online {
		t.Fatal("an agent connected here went offline by a lease sweep")
	}
}

// Outdated picks the stored rows Merge would change: unknown agents, and
// agents not connected here whose row or newest event differs from what
// the registry holds; never one connected here.
func TestOutdated(t *testing.T) {
	now := time.Unix(1700000000, 0).UTC()
	r, err := Load(context.Background(), &recordingStore{}, nil, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cred := store.Credential{Kind: "token", ID: "t1"}
	here := uuid.New()
	if _, err := r.Report(here, cred, &protobufs.AgentToServer{AgentDescription: &protobufs.AgentDescription{}}, false, true); err != nil {
		t.Fatal(err)
	}
	desc := func(version string) []byte {
		b, _ := proto.Marshal(&protobufs.AgentDescription{IdentifyingAttributes: []*protobufs.KeyValue{{Key: "service.version",
			Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: version}}}}})
		return b
	}
	health, _ := proto.Marshal(&protobufs.ComponentHealth{Healthy: true, Status: "ok"})
	held := store.Agent{UID: uuid.New(), Credential: cred, Kind: "collector", Description: desc("0.149.0"), Health: health,
		TokenLabels: map[string]string{"site": "edge"}, Extra: []byte(`{"a":1}`), Instance: "b", FirstSeen: now, LastSeen: now}
	ev := func(seq uint64) []store.Event { return []store.Event{{Seq: seq, Time: now, Type: "t", Message: "m"}} }
	r.Merge([]store.Agent{held}, map[[16]byte][]store.Event{held.UID: ev(3)}, func(t time.Time) time.Time { return t.Add(time.Minute) })

	changed := func(f func(*store.Agent)) store.Agent { c := held; f(&c); return c }
	unhealthy, _ := proto.Marshal(&protobufs.ComponentHealth{Healthy: false, Status: "down"})
	tests := []struct {
		name     string
		rec      store.Agent
		event    uint64
		outdated bool
	}{
		{"same row, same newest event", held, 3, false},
		{"same row, only seen later", changed(func(a *store.Agent) { a.LastSeen = now.Add(time.Hour) }), 3, false},
		{"newer event", held, 4, true},
		{"description", changed(func(a *store.Agent) { a.Description = desc("0.149.1") }), 3, true},
		{"kind", changed(func(a *store.Agent) { a.Kind = "updater" }), 3, true},
		{"health", changed(func(a *store.Agent) { a.Health = unhealthy }), 3, true},
		{"no health", changed(func(a *store.Agent) { a.Health = nil }), 3, true},
		{"token labels", changed(func(a *store.Agent) { a.TokenLabels = map[string]string{"site": "core"} }), 3, true},
		{"extra", changed(func(a *store.Agent) { a.Extra = []byte(`{"a":2}`) }), 3, true},
		{"instance", changed(func(a *store.Agent) { a.Instance = "c" }), 3, true},
		{"unknown agent", changed(func(a *store.Agent) { a.UID = uuid.New() }), 0, true},
		{"connected here", store.Agent{UID: here, Credential: cred, Kind: "updater", LastSeen: now}, 9, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var events map[[16]byte][]store.Event
			if tt.event > 0 {
				events = map[[16]byte][]store.Event{tt.rec.UID: ev(tt.event)}
			}
			got := r.Outdated([]store.Agent{tt.rec}, events)
			if (len(got) == 1) != tt.outdated || len(got) > 1 {
				t.Fatalf("outdated %v, want %v", len(got) == 1, tt.outdated)
			}
		})
	}
}

// The row written for an agent holds its description as the attribute
// rules left it (encodeDescription of the two lists, service.version
// without its v), although the registry keeps only the lists: read back by
// another registry it gives the same attributes, and once the agent left,
// that row is what this registry holds (not outdated) while a row with
// another description is.
func TestWrittenDescription(t *testing.T) {
	now := time.Unix(1700000000, 0).UTC()
	st := &recordingStore{}
	r, err := Load(context.Background(), st, nil, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	str := func(k, v string) *protobufs.KeyValue {
		return &protobufs.KeyValue{Key: k, Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: v}}}
	}
	uid := uuid.New()
	cred := store.Credential{Kind: "token", ID: "t1"}
	msg := &protobufs.AgentToServer{AgentDescription: &protobufs.AgentDescription{
		IdentifyingAttributes: []*protobufs.KeyValue{str("service.version", "v0.149.0"), str("service.name", "otelcol"), str("host.name", "a")},
		NonIdentifyingAttributes: []*protobufs.KeyValue{str("os.type", "linux"), str("host.name", "b"),
			{Key: "cores", Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_IntValue{IntValue: 8}}}},
	}}
	if _, err := r.Report(uid, cred, msg, false, true); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	var row store.Agent
	for _, b := range st.batches {
		for _, a := range b.Agents {
			if a.UID == uid {
				row = a
			}
		}
	}
	st.mu.Unlock()
	want := encodeDescription(map[string]string{"service.version": "0.149.0", "service.name": "otelcol", "host.name": "a"},
		map[string]string{"os.type": "linux", "host.name": "b", "cores": "8"})
	if string(row.Description) != string(want) {
		t.Fatalf("written description %x, want %x", row.Description, want)
	}

	other, err := Load(context.Background(), &recordingStore{}, nil, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.Merge([]store.Agent{row}, nil, func(t time.Time) time.Time { return t.Add(time.Minute) })
	a, _ := r.Get(uid)
	b, _ := other.Get(uid)
	if !a.Attributes.Equal(b.Attributes) || !maps.Equal(a.NonIdentifying.Map(), b.NonIdentifying.Map()) {
		t.Fatalf("read back: %v / %v, want %v / %v", b.Attributes, b.NonIdentifying.Map(), a.Attributes, a.NonIdentifying.Map())
	}
	if got := other.Outdated([]store.Agent{row}, nil); len(got) != 0 {
		t.Fatal("the row merged is outdated at once")
	}

	r.Disconnected(uid)
	if got := r.Outdated([]store.Agent{row}, nil); len(got) != 0 {
		t.Fatal("the row this registry wrote is outdated once the agent left")
	}
	changed := row
	changed.Description = encodeDescription(map[string]string{"service.version": "0.149.1"}, nil)
	if got := r.Outdated([]store.Agent{changed}, nil); len(got) != 1 {
		t.Fatal("a row with another description is not outdated")
	}
}

// A merged row whose description is the one held (an agent whose
// connection to another instance closed, a new last-seen time) keeps the
// view held instead of decoding it again; a new description, or new token
// labels, make a new one.
func TestMergeKeepsTheDescriptionHeld(t *testing.T) {
	r := newTestRegistry(t, &recordingStore{}, Options{})
	uid := uuid.New()
	now := time.Now()
	lease := func(t time.Time) time.Time { return t.Add(time.Minute) }
	row := store.Agent{UID: uid, Credential: store.Credential{Kind: "token", ID: "t"}, Kind: "collector",
		Description: encodeDescription(map[string]string{"service.name": "otelcol", "service.version": "0.149.0"}, map[string]string{"host.name": "h1"}),
		Instance:    "a", FirstSeen: now, LastSeen: now}
	view := func() attributes.View {
		r.mu.RLock()
		defer r.mu.RUnlock()
		return r.agents[uid].desc.View
	}
	r.Merge([]store.Agent{row}, nil, lease)
	first := view()

	row.Instance, row.LastSeen = "", now.Add(time.Second) // its connection closed
	r.Merge([]store.Agent{row}, nil, lease)
	if view() != first {
		t.Fatal("a row with the same description got a view of its own")
	}

	row.TokenLabels = map[string]string{"site": "paris"}
	r.Merge([]store.Agent{row}, nil, lease)
	if v := view(); v == first || v.Value("labels.site") != "paris" || v.Value("host.name") != "h1" {
		t.Fatalf("after new token labels the view is %v", v)
	}
	labelled := view()

	row.Description = encodeDescription(map[string]string{"service.name": "otelcol", "service.version": "0.149.1"}, map[string]string{"host.name": "h1"})
	r.Merge([]store.Agent{row}, nil, lease)
	if v := view(); v == labelled || v.Value("service.version") != "0.149.1" || v.Value("labels.site") != "paris" {
		t.Fatalf("after a new description the view is %v", v)
	}
}

// Merge replaces records a bounded batch at a time (the agents connected
// here report between batches); every record is merged and every merged
// agent told to observers once.
func TestMergeInBatches(t *testing.T) {
	r := newTestRegistry(t, &recordingStore{}, Options{})
	told := map[uuid.UUID]int{}
	var mu sync.Mutex
	r.Observe(func(u uuid.UUID) { mu.Lock(); told[u]++; mu.Unlock() })
	now := time.Now()
	var recs []store.Agent
	for range 2*mergeHold + 7 {
		recs = append(recs, store.Agent{UID: uuid.New(), Credential: store.Credential{Kind: "token", ID: "t"}, Kind: "collector", FirstSeen: now, LastSeen: now})
	}
	if n := r.Merge(recs, nil, func(t time.Time) time.Time { return t.Add(time.Minute) }); n != len(recs) {
		t.Fatalf("merged %d of %d", n, len(recs))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, rec := range recs {
		if told[rec.UID] != 1 {
			t.Fatalf("agent %s told %d times", uuid.UUID(rec.UID), told[rec.UID])
		}
		if _, ok := r.Peek(rec.UID); !ok {
			t.Fatalf("agent %s not merged", uuid.UUID(rec.UID))
		}
	}
}
