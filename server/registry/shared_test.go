package registry

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/store"
)

// An agent whose connection to another instance closed is offline here at
// once, and stays so through lease sweeps and merged records that show it
// last seen then; once seen later (it reconnected to another instance) its
// lease holds again. One connected here, or seen after the notice, is not
// affected.
func TestLeftElsewhere(t *testing.T) {
	now := time.Unix(1700000000, 0).UTC()
	var mu sync.Mutex
	cur := now
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return cur }
	r, err := Load(context.Background(), &recordingStore{}, nil, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cred := store.Credential{Kind: "token", ID: "t1"}
	lease := func(t time.Time) time.Time { return t.Add(3 * time.Second) }
	gone, moved, here := uuid.New(), uuid.New(), uuid.New()
	r.Merge([]store.Agent{{UID: gone, Credential: cred, Kind: "collector", FirstSeen: now, LastSeen: now},
		{UID: moved, Credential: cred, Kind: "collector", FirstSeen: now, LastSeen: now.Add(time.Second)}}, nil, lease)
	if _, err := r.Report(here, cred, &protobufs.AgentToServer{AgentDescription: &protobufs.AgentDescription{}}, false, true); err != nil {
		t.Fatal(err)
	}
	online := func(uid uuid.UUID) bool { a, _ := r.Peek(uid); return a.Online }

	r.LeftElsewhere(gone, now)
	r.LeftElsewhere(moved, now) // seen after it left: it reconnected elsewhere
	r.LeftElsewhere(here, now.Add(time.Hour))
	if online(gone) || !online(moved) || !online(here) {
		t.Fatalf("after the notices: gone %v, moved %v, here %v; want false true true", online(gone), online(moved), online(here))
	}
	r.SeenElsewhere(map[[16]byte]time.Time{gone: now, moved: now.Add(time.Second)}, lease)
	r.Merge([]store.Agent{{UID: gone, Credential: cred, Kind: "collector", FirstSeen: now, LastSeen: now}}, nil, lease)
	if online(gone) {
		t.Fatal("a lease sweep or a merge of its last row brought back an agent that left")
	}
	r.SeenElsewhere(map[[16]byte]time.Time{gone: now.Add(2 * time.Second)}, lease)
	if !online(gone) {
		t.Fatal("an agent seen again after it left stays offline")
	}
}

// Reports are written with the next flush, the newest of a feature
// winning; relayed events join the history with their own times, numbered
// after it; Left hears of an agent's last connection closing.
func TestReportsRelayedEventsAndLeft(t *testing.T) {
	st := &recordingStore{}
	var left []uuid.UUID
	r, err := Load(context.Background(), st, nil, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour, Left: func(uid uuid.UUID, _ time.Time) { left = append(left, uid) }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	uid := uuid.New()
	cred := store.Credential{Kind: "token", ID: "t1"}
	for range 2 { // two connections
		if _, err := r.Report(uid, cred, &protobufs.AgentToServer{AgentDescription: &protobufs.AgentDescription{}}, false, true); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Unix(1700000000, 0).UTC()
	r.SetReport(uid, "packages", t0.Add(time.Second), []byte("new"))
	r.SetReport(uid, "packages", t0, []byte("old"))
	r.SetReport(uid, "config", t0, []byte("c"))
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, b := range st.batches {
		for _, rep := range b.Reports {
			got[rep.Feature] = string(rep.Data)
		}
	}
	if got["packages"] != "new" || got["config"] != "c" || len(got) != 2 {
		t.Fatalf("reports written: %v", got)
	}

	before, _ := r.Get(uid)
	if !r.AddEvents(uid, []store.Event{{Seq: 99, Time: t0, Type: "offer_offered", Message: "offer none → offered"}}) {
		t.Fatal("relayed events refused for a known agent")
	}
	after, _ := r.Get(uid)
	last := after.Events[len(after.Events)-1]
	if len(after.Events) != len(before.Events)+1 || last.Seq != before.Events[len(before.Events)-1].Seq+1 ||
		!last.Time.Equal(t0) || last.Type != "offer_offered" {
		t.Fatalf("relayed event recorded as %+v", last)
	}
	if r.AddEvents(uuid.New(), []store.Event{{Type: "x"}}) {
		t.Fatal("relayed events taken for an unknown agent")
	}
	st.batches = nil
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if b := st.batches; len(b) != 1 || len(b[0].Agents) != 1 || !b[0].Agents[0].EventsOnly || len(b[0].Events[uid]) != 1 {
		t.Fatalf("the relayed event written as %+v; want with its row, marked EventsOnly", b)
	}

	r.Disconnected(uid)
	if len(left) != 0 {
		t.Fatal("Left told while a connection is still open")
	}
	r.Disconnected(uid)
	if len(left) != 1 || left[0] != uid {
		t.Fatalf("Left told %v", left)
	}
}

// historyStore keeps events by agent, as a store with histories does.
type historyStore struct {
	recordingStore
	events map[[16]byte][]store.Event
}

func (s *historyStore) LoadEvents(_ context.Context, uid [16]byte, keep int) ([]store.Event, error) {
	return store.NewestEvents(s.events[uid], keep), nil
}

// With a store that reads histories, a merged agent's history is not kept
// in memory: Get reads it from the store, followed by what was recorded
// here since; the numbering of events recorded here continues the stored
// history's.
func TestMergedHistoryReadFromTheStore(t *testing.T) {
	now := time.Unix(1700000000, 0).UTC()
	uid := uuid.New()
	stored := []store.Event{{Seq: 7, Time: now, Type: EventRegistered, Message: "registered"}, {Seq: 8, Time: now, Type: "offer_offered", Message: "offered"}}
	st := &historyStore{events: map[[16]byte][]store.Event{uid: stored}}
	r, err := Load(context.Background(), st, nil, slog.New(slog.DiscardHandler), Options{FlushInterval: time.Hour, SeenInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Merge([]store.Agent{{UID: uid, Credential: store.Credential{Kind: "token", ID: "t"}, Kind: "collector", FirstSeen: now, LastSeen: now}},
		map[[16]byte][]store.Event{uid: stored}, func(t time.Time) time.Time { return t.Add(time.Minute) })
	r.mu.RLock()
	inMemory := len(r.agents[uid].events)
	r.mu.RUnlock()
	if inMemory != 0 {
		t.Fatalf("%d events of a merged agent kept in memory", inMemory)
	}
	r.AddEvent(uid, "offer_failed", "failed here")
	a, _ := r.Get(uid)
	var got []string
	for _, e := range a.Events {
		got = append(got, fmt.Sprint(e.Seq, e.Type))
	}
	if want := []string{"7registered", "8offer_offered", "9offer_failed"}; !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
}
