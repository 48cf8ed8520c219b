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

	"github.com/myriarch/myriarch/server/store"
)

type fakeTokens map[string]string // id → name

func (f fakeTokens) TokenName(id string) string           { return f[id] }
func (f fakeTokens) TokenLabels(string) map[string]string { return map[string]string{"from": "token"} }

// Only agents whose inventory entries change are relabelled and notified;
// the rest keep their labels (an estate reload with the same inventory
// touches no agent).
func TestSetInventoryTouchesOnlyChangedAgents(t *testing.T) {
	r, err := Load(context.Background(), &recordingStore{}, fakeTokens{"t1": "north", "t2": "south"}, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var mu sync.Mutex
	var notified []uuid.UUID
	r.Observe(func(uid uuid.UUID) {
		mu.Lock()
		notified = append(notified, uid)
		mu.Unlock()
	})
	north, south, byUID, cert := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	for uid, cred := range map[uuid.UUID]store.Credential{
		north: {Kind: "token", ID: "t1"}, south: {Kind: "token", ID: "t2"}, byUID: {Kind: "token", ID: "t2"}, cert: {Kind: "certificate", ID: "CN=x"},
	} {
		if _, err := r.Report(uid, cred, &protobufs.AgentToServer{AgentDescription: &protobufs.AgentDescription{}}, false, true); err != nil {
			t.Fatal(err)
		}
	}
	labels := func(uid uuid.UUID) map[string]string { a, _ := r.Peek(uid); return a.Labels }
	step := func(name string, inv Inventory, want []uuid.UUID) {
		t.Helper()
		mu.Lock()
		notified = nil
		mu.Unlock()
		r.SetInventory(inv)
		mu.Lock()
		got := slices.Clone(notified)
		mu.Unlock()
		slices.SortFunc(got, compareUID)
		slices.SortFunc(want, compareUID)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: notified %v, want %v", name, got, want)
		}
	}
	inv := func(byToken map[string]map[string]string, byUIDs map[uuid.UUID]map[string]string) Inventory {
		return Inventory{ByToken: byToken, ByUID: byUIDs}
	}

	step("first inventory", inv(map[string]map[string]string{"north": {"wave": "1"}}, map[uuid.UUID]map[string]string{byUID: {"wave": "3"}}),
		[]uuid.UUID{north, byUID})
	if l := labels(north); l["wave"] != "1" || l["from"] != "token" {
		t.Fatalf("north labels %v", l)
	}
	if l := labels(byUID); l["wave"] != "3" {
		t.Fatalf("by-UID labels %v", l)
	}
	step("same inventory again", inv(map[string]map[string]string{"north": {"wave": "1"}}, map[uuid.UUID]map[string]string{byUID: {"wave": "3"}}), nil)
	step("south added, north changed", inv(map[string]map[string]string{"north": {"wave": "2"}, "south": {"wave": "1"}},
		map[uuid.UUID]map[string]string{byUID: {"wave": "3"}}), []uuid.UUID{north, south, byUID})
	if l := labels(byUID); l["wave"] != "3" {
		t.Fatalf("by UID must win over by token: %v", l)
	}
	step("entries removed", inv(nil, nil), []uuid.UUID{north, south, byUID})
	for _, uid := range []uuid.UUID{north, south, byUID} {
		if l := labels(uid); l["wave"] != "" || l["from"] != "token" {
			t.Fatalf("labels after removal %v", l)
		}
	}
	if a, _ := r.Peek(cert); !a.Attributes.Known() {
		t.Fatal("certificate agent has no attribute view")
	}
}

// Relabelling keeps the reported lists: an agent's identifying and
// non-identifying attributes read the same before and after its labels
// change, a key reported in both lists included, and the view carries the
// new labels only.
func TestRelabelKeepsTheReportedLists(t *testing.T) {
	r, err := Load(context.Background(), &recordingStore{}, fakeTokens{}, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	uid := uuid.New()
	kvs := func(pairs ...string) []*protobufs.KeyValue {
		var out []*protobufs.KeyValue
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, &protobufs.KeyValue{Key: pairs[i], Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: pairs[i+1]}}})
		}
		return out
	}
	desc := &protobufs.AgentDescription{
		IdentifyingAttributes:    kvs("service.name", "otelcol", "host.name", "id-host"),
		NonIdentifyingAttributes: kvs("host.name", "non-host", "os.type", "linux"),
	}
	if _, err := r.Report(uid, store.Credential{Kind: "certificate", ID: "CN=x"}, &protobufs.AgentToServer{AgentDescription: desc}, false, true); err != nil {
		t.Fatal(err)
	}
	wantID := map[string]string{"service.name": "otelcol", "host.name": "id-host"}
	wantNon := map[string]string{"host.name": "non-host", "os.type": "linux"}
	for _, step := range []struct {
		name   string
		labels map[string]string
	}{{"before", nil}, {"labelled", map[string]string{"wave": "1"}}, {"relabelled", map[string]string{"wave": "2"}}} {
		if step.labels != nil {
			r.SetInventory(Inventory{ByUID: map[uuid.UUID]map[string]string{uid: step.labels}})
		}
		a, _ := r.Get(uid)
		if !maps.Equal(a.Identifying.Map(), wantID) || !maps.Equal(a.NonIdentifying.Map(), wantNon) {
			t.Errorf("%s: identifying %v, non-identifying %v", step.name, a.Identifying.Map(), a.NonIdentifying.Map())
		}
		if a.Attributes.Value("host.name") != "id-host" || a.Attributes.Value("labels.wave") != step.labels["wave"] {
			t.Errorf("%s: view %v", step.name, a.Attributes)
		}
		if _, ok := a.Attributes.Get("labels.wave"); ok != (step.labels != nil) {
			t.Errorf("%s: view %v", step.name, a.Attributes)
		}
	}
}
