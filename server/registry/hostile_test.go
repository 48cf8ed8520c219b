package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/server/store"
)

// What one agent can make the registry hold, in memory and in the store,
// is bounded whatever it reports.

func strKV(k, v string) *protobufs.KeyValue {
	return &protobufs.KeyValue{Key: k, Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: v}}}
}

// hugeDescription is 10 000 attributes per list with 4 KiB values (kept
// by the agents specification's limits: 256 per list, 4096 bytes each, about 2 MiB).
func hugeDescription(prefix string) *protobufs.AgentDescription {
	d := &protobufs.AgentDescription{IdentifyingAttributes: []*protobufs.KeyValue{strKV("service.name", "otelcol")}}
	big := strings.Repeat("v", 4096)
	for i := range 10000 {
		d.IdentifyingAttributes = append(d.IdentifyingAttributes, strKV(fmt.Sprintf("%sid.%05d", prefix, i), big))
		d.NonIdentifyingAttributes = append(d.NonIdentifyingAttributes, strKV(fmt.Sprintf("%snon.%05d", prefix, i), big))
	}
	return d
}

func newTestRegistry(t *testing.T, st store.Agents, opts Options) *Registry {
	t.Helper()
	if opts.FlushInterval == 0 {
		opts.FlushInterval, opts.SeenInterval = time.Hour, time.Hour
	}
	r, err := Load(context.Background(), st, nil, slog.New(slog.DiscardHandler), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func (s *recordingStore) lastRow(uid uuid.UUID) (store.Agent, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.batches) - 1; i >= 0; i-- {
		for _, a := range s.batches[i].Agents {
			if a.UID == uid {
				return a, true
			}
		}
	}
	return store.Agent{}, false
}

var cred1 = store.Credential{Kind: "token", ID: "t1"}

func TestDescriptionIsBounded(t *testing.T) {
	st := &recordingStore{}
	r := newTestRegistry(t, st, Options{})
	uid := uuid.New()
	if _, err := r.Report(uid, cred1, &protobufs.AgentToServer{AgentDescription: hugeDescription("")}, true, false); err != nil {
		t.Fatal(err)
	}
	a, _ := r.Get(uid)
	if n := mapBytes(a.Identifying.Map()) + mapBytes(a.NonIdentifying.Map()); n > MaxDescriptionBytes {
		t.Errorf("%d bytes of description kept in memory, bound %d", n, MaxDescriptionBytes)
	}
	if a.Identifying.Value("service.name") != "otelcol" {
		t.Error("the ordinary attributes were pushed out by the huge ones")
	}
	if _, ok := findEvent(a.Events, EventAttributeLimit, "exceeds the limit of 65536 bytes"); !ok {
		t.Errorf("no attribute_limit event for the dropped attributes: %v", a.Events)
	}
	row, ok := st.lastRow(uid)
	if !ok {
		t.Fatal("agent not written")
	}
	if len(row.Description) > MaxDescriptionBytes+16<<10 {
		t.Errorf("%d bytes of description stored, bound %d (+ encoding)", len(row.Description), MaxDescriptionBytes)
	}

	// A restart rebuilds the same lists from what was stored.
	r2 := newTestRegistry(t, &loadedStore{agents: []store.Agent{row}}, Options{})
	b, ok := r2.Get(uid)
	if !ok || !sameMap(a.Identifying.Map(), b.Identifying.Map()) || !sameMap(a.NonIdentifying.Map(), b.NonIdentifying.Map()) {
		t.Error("the stored description does not rebuild the same attributes")
	}
}

// TestStoredUnboundedDescriptionIsRewritten: a description stored whole by
// an earlier version is bounded at load and written back bounded.
func TestStoredUnboundedDescriptionIsRewritten(t *testing.T) {
	uid := uuid.New()
	raw, _ := proto.Marshal(hugeDescription(""))
	st := &loadedStore{agents: []store.Agent{{UID: uid, Credential: cred1, Kind: string(KindUnknown), Description: raw,
		FirstSeen: time.Now(), LastSeen: time.Now()}}}
	r := newTestRegistry(t, st, Options{})
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	row, ok := st.lastRow(uid)
	if !ok || len(row.Description) > MaxDescriptionBytes+16<<10 {
		t.Fatalf("stored description of %d bytes not rewritten bounded (written %v)", len(row.Description), ok)
	}
}

func TestEventMessagesAreBounded(t *testing.T) {
	r := newTestRegistry(t, &recordingStore{}, Options{})
	uid := uuid.New()
	d := &protobufs.AgentDescription{}
	for i := range attributes.MaxPerList {
		d.NonIdentifyingAttributes = append(d.NonIdentifyingAttributes, strKV(fmt.Sprintf("labels.%04d.%s", i, strings.Repeat("k", 4000)), "x"))
	}
	for range 3 {
		if _, err := r.Report(uid, cred1, &protobufs.AgentToServer{AgentDescription: d}, true, false); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := r.Get(uid)
	total := 0
	for _, e := range a.Events {
		total += len(e.Message)
		if len(e.Message) > MaxEventMessage {
			t.Errorf("event %s of %d bytes, bound %d", e.Type, len(e.Message), MaxEventMessage)
		}
	}
	e, ok := findEvent(a.Events, EventLabelAttributeDropped, "… and ")
	if !ok {
		t.Fatalf("label warning does not say how many more keys were dropped: %v", a.Events)
	}
	if !strings.HasSuffix(e.Message, "more") {
		t.Errorf("label warning %q", e.Message)
	}
	if long := limitMessage(strings.Repeat("é", 2000)); len(long) > MaxEventMessage || !strings.Contains(long, "more bytes)") {
		t.Errorf("limitMessage of 4000 bytes: %d bytes %q…", len(long), long[:20])
	}
}

func TestHealthIsBounded(t *testing.T) {
	st := &recordingStore{}
	r := newTestRegistry(t, st, Options{})
	uid := uuid.New()
	h := &protobufs.ComponentHealth{Healthy: true, Status: "ok", ComponentHealthMap: map[string]*protobufs.ComponentHealth{}}
	for i := range 2000 {
		h.ComponentHealthMap[fmt.Sprintf("receiver/%04d", i)] = &protobufs.ComponentHealth{Status: strings.Repeat("s", 100)}
	}
	if _, err := r.Report(uid, cred1, &protobufs.AgentToServer{Health: h}, true, false); err != nil {
		t.Fatal(err)
	}
	a, _ := r.Get(uid)
	if h := a.Health(); h == nil || len(h.ComponentHealthMap) != 0 || !h.Healthy || h.Status != "ok" {
		t.Errorf("kept health %v, want the top level only", h)
	}
	if _, ok := findEvent(a.Events, EventHealthLimit, "only its top level is kept"); !ok {
		t.Errorf("no health_limit event: %v", a.Events)
	}
}

func TestRegistrationRate(t *testing.T) {
	now := time.Unix(1e9, 0)
	var logs bytes.Buffer
	r, err := Load(context.Background(), &recordingStore{}, nil, slog.New(slog.NewTextHandler(&logs, nil)),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour, NewAgentsPerMinute: 5, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	report := func(uid uuid.UUID, c store.Credential) error {
		_, err := r.Report(uid, c, &protobufs.AgentToServer{}, true, false)
		return err
	}
	var first []uuid.UUID
	for range 5 {
		u := uuid.New()
		first = append(first, u)
		if err := report(u, cred1); err != nil {
			t.Fatal(err)
		}
	}
	var limited *RegistrationLimitError
	for range 3 {
		if err := report(uuid.New(), cred1); !errors.As(err, &limited) || limited.RetryAfter <= 0 {
			t.Fatalf("6th new agent in a minute: %v, want a RegistrationLimitError with a retry time", err)
		}
	}
	if strings.Count(logs.String(), "refusing new agents") != 1 {
		t.Errorf("refusals logged %d times, want once a minute:\n%s", strings.Count(logs.String(), "refusing new agents"), logs.String())
	}
	if err := report(first[0], cred1); err != nil {
		t.Errorf("a registered agent was refused: %v", err)
	}
	if err := report(uuid.New(), store.Credential{Kind: "token", ID: "t2"}); err != nil {
		t.Errorf("another credential was refused: %v", err)
	}
	now = now.Add(12 * time.Second) // one more per 12 s
	if err := report(uuid.New(), cred1); err != nil {
		t.Errorf("after the bucket refilled: %v", err)
	}
	if n := len(r.List("", false)); n != 7 {
		t.Errorf("%d agents registered, want 7", n)
	}
}

// failingStore fails writes while fail is set.
type failingStore struct {
	recordingStore
	mu   sync.Mutex
	fail bool
}

func (s *failingStore) Write(ctx context.Context, b store.Batch) error {
	s.mu.Lock()
	fail := s.fail
	s.mu.Unlock()
	if fail {
		return errors.New("disk full")
	}
	return s.recordingStore.Write(ctx, b)
}

func TestFirstBindingIsDurable(t *testing.T) {
	st := &failingStore{}
	r := newTestRegistry(t, st, Options{}) // the write-behind loop would wait an hour
	uid := uuid.New()
	if _, err := r.Report(uid, cred1, &protobufs.AgentToServer{}, false, true); err != nil {
		t.Fatal(err)
	}
	if row, ok := st.lastRow(uid); !ok || row.Credential != cred1 {
		t.Fatal("a new agent was answered before its binding to its credential was written")
	}
	// Heartbeats stay coalesced.
	before := len(st.batches)
	for i := range 10 {
		r.Report(uid, cred1, &protobufs.AgentToServer{SequenceNum: uint64(i + 1)}, false, false)
	}
	if len(st.batches) != before {
		t.Errorf("heartbeats wrote %d batches", len(st.batches)-before)
	}
	// A binding that cannot be written is not answered as registered.
	st.mu.Lock()
	st.fail = true
	st.mu.Unlock()
	u2 := uuid.New()
	if _, err := r.Report(u2, cred1, &protobufs.AgentToServer{}, false, true); !errors.Is(err, ErrNotDurable) {
		t.Fatalf("registration with a failing store: %v, want ErrNotDurable", err)
	}
	if _, err := r.Report(u2, cred1, &protobufs.AgentToServer{SequenceNum: 1}, false, false); !errors.Is(err, ErrNotDurable) {
		t.Fatalf("retry with the store still failing: %v, want ErrNotDurable", err)
	}
	st.mu.Lock()
	st.fail = false
	st.mu.Unlock()
	if _, err := r.Report(u2, cred1, &protobufs.AgentToServer{SequenceNum: 2}, false, false); err != nil {
		t.Fatalf("retry once the store works: %v", err)
	}
	if _, ok := st.lastRow(u2); !ok {
		t.Fatal("not written after the retry")
	}
}

func TestPrune(t *testing.T) {
	now := time.Unix(1e9, 0)
	var logs bytes.Buffer
	st := &recordingStore{}
	r, err := Load(context.Background(), st, nil, slog.New(slog.NewTextHandler(&logs, nil)),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour, PruneAfter: 30 * 24 * time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	gone, back, connected := uuid.New(), uuid.New(), uuid.New()
	for _, u := range []uuid.UUID{gone, back, connected} {
		r.Report(u, cred1, &protobufs.AgentToServer{}, u != connected, u == connected)
	}
	now = now.Add(29 * 24 * time.Hour)
	r.Report(back, cred1, &protobufs.AgentToServer{SequenceNum: 1}, true, false)
	now = now.Add(2 * 24 * time.Hour)
	var told []uuid.UUID
	r.Observe(func(u uuid.UUID) { told = append(told, u) })
	r.List("", false) // the listing order is built before the pruning
	r.prune()
	if _, ok := r.Get(gone); ok {
		t.Fatal("an agent offline for 31 days was kept")
	}
	for _, u := range []uuid.UUID{back, connected} {
		if _, ok := r.Get(u); !ok {
			t.Errorf("agent %s pruned although seen recently or connected", u)
		}
	}
	if n := len(r.List("", false)); n != 2 {
		t.Errorf("listing shows %d agents, want 2", n)
	}
	if len(told) != 1 || told[0] != gone {
		t.Errorf("observers told %v, want [%s]", told, gone)
	}
	if !strings.Contains(logs.String(), "agent pruned") || !strings.Contains(logs.String(), gone.String()) {
		t.Errorf("pruning not logged:\n%s", logs.String())
	}
	st.mu.Lock()
	deleted := false
	for _, b := range st.batches {
		for _, d := range b.Delete {
			deleted = deleted || d == gone
		}
	}
	st.mu.Unlock()
	if !deleted {
		t.Error("the pruned agent was not deleted from the store")
	}
	// It may come back: registered anew.
	if res, err := r.Report(gone, cred1, &protobufs.AgentToServer{}, true, false); err != nil || !res.New {
		t.Errorf("pruned agent coming back: %+v %v, want a new registration", res, err)
	}
}

// loadedStore starts with agents and records writes.
type loadedStore struct {
	recordingStore
	agents []store.Agent
}

func (s *loadedStore) LoadAgents(context.Context, int) ([]store.Agent, map[[16]byte][]store.Event, error) {
	return s.agents, nil, nil
}

func findEvent(evs []store.Event, typ, contains string) (store.Event, bool) {
	for _, e := range evs {
		if e.Type == typ && strings.Contains(e.Message, contains) {
			return e, true
		}
	}
	return store.Event{}, false
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestHealthKeptEncoded: the health an agent reports reads back whole, with
// its components, from the snapshot and from the row written; an agent that
// reported none has none; a row with the same health is the same row.
func TestHealthKeptEncoded(t *testing.T) {
	st := &recordingStore{}
	r := newTestRegistry(t, st, Options{})
	uid, silent := uuid.New(), uuid.New()
	h := &protobufs.ComponentHealth{Healthy: false, Status: "degraded", LastError: "queue full", StartTimeUnixNano: 42,
		ComponentHealthMap: map[string]*protobufs.ComponentHealth{
			"exporter/otlp": {Healthy: false, LastError: "queue full"},
			"receiver/otlp": {Healthy: true, Status: "ok"},
			"processor/x":   {Healthy: true},
		}}
	for _, m := range []struct {
		uid uuid.UUID
		msg *protobufs.AgentToServer
	}{{uid, &protobufs.AgentToServer{Health: h}}, {silent, &protobufs.AgentToServer{}}} {
		if _, err := r.Report(m.uid, cred1, m.msg, true, false); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := r.Get(uid)
	if got := a.Health(); !proto.Equal(got, h) {
		t.Errorf("snapshot health %v, want %v", got, h)
	}
	r.mu.RLock()
	rec := r.agents[uid].record()
	same := r.agents[uid].sameRow(&rec)
	r.mu.RUnlock()
	var stored protobufs.ComponentHealth
	if err := proto.Unmarshal(rec.Health, &stored); err != nil || !proto.Equal(&stored, h) {
		t.Errorf("row health %v (%v), want %v", &stored, err, h)
	}
	if !same {
		t.Error("the agent's own row does not compare as the same row")
	}
	if s, _ := r.Get(silent); s.Health() != nil {
		t.Errorf("an agent that reported no health has %v", s.Health())
	}
}
