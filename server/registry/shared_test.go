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

// An agent whose row names another instance is online while that instance
// lives (its lease renewed by sweeps), whatever its last-seen time; when
// its row names no instance any more (its connection closed) it is offline
// at once, and stays so through sweeps that show it last seen then, until
// seen later (it polls over plain HTTP elsewhere). One connected here is
// not affected.
func TestLeasesOfInstances(t *testing.T) {
	now := time.Unix(1700000000, 0).UTC()
	var mu sync.Mutex
	cur := now
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return cur }
	advance := func(d time.Duration) { mu.Lock(); cur = cur.Add(d); mu.Unlock() }
	r, err := Load(context.Background(), &recordingStore{}, nil, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour, Now: clock, Instance: "me"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cred := store.Credential{Kind: "token", ID: "t1"}
	lease := func(t time.Time) time.Time { return t.Add(3 * time.Second) }
	online := func(uid uuid.UUID) bool { a, _ := r.Peek(uid); return a.Online }
	row := func(uid uuid.UUID, instance string, seen time.Time) store.Agent {
		return store.Agent{UID: uid, Credential: cred, Kind: "collector", FirstSeen: now, LastSeen: seen, Instance: instance}
	}
	ws, here := uuid.New(), uuid.New()
	r.SeenElsewhere(nil, map[string]time.Time{"b": now}, lease)
	r.Merge([]store.Agent{row(ws, "b", now.Add(-time.Hour))}, nil, lease)
	if _, err := r.Report(here, cred, &protobufs.AgentToServer{AgentDescription: &protobufs.AgentDescription{}}, false, true); err != nil {
		t.Fatal(err)
	}
	if !online(ws) {
		t.Fatal("an agent connected to a live instance is offline")
	}
	advance(10 * time.Second)
	if online(ws) {
		t.Fatal("online after its instance's lease ended")
	}
	r.SeenElsewhere(nil, map[string]time.Time{"b": now.Add(9 * time.Second)}, lease)
	if !online(ws) {
		t.Fatal("offline although its instance's lease was renewed")
	}
	closed := now.Add(10 * time.Second)
	r.Merge([]store.Agent{row(ws, "", closed)}, nil, lease)
	r.SeenElsewhere(map[[16]byte]time.Time{ws: closed}, map[string]time.Time{"b": now.Add(10 * time.Second)}, lease)
	if online(ws) {
		t.Fatal("an agent whose connection closed is online by its last-seen time")
	}
	r.SeenElsewhere(map[[16]byte]time.Time{ws: closed.Add(time.Second)}, nil, lease)
	if !online(ws) {
		t.Fatal("an agent seen again after its connection closed stays offline")
	}
	r.SeenElsewhere(nil, nil, lease)
	if !online(here) {
		t.Fatal("an agent connected here went offline by a sweep")
	}
}

// Reports are written with the next flush, the newest of a feature
// winning; relayed events join the history with their own times, numbered
// after it; each WebSocket of an agent opening and its last closing are
// written as connections of this instance.
func TestReportsRelayedEventsAndLeft(t *testing.T) {
	st := &recordingStore{}
	r, err := Load(context.Background(), st, nil, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour, Instance: "me"})
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
	// Its row is written already: the event goes without it.
	if b := st.batches; len(b) != 1 || len(b[0].Agents) != 0 || len(b[0].Events[uid]) != 1 {
		t.Fatalf("the relayed event written as %+v; want the event alone", b)
	}

	conns := func() (connected, disconnected [][16]byte) {
		st.batches = nil
		if err := r.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, b := range st.batches {
			if b.Instance != "me" && len(b.Connected)+len(b.Disconnected) > 0 {
				t.Fatalf("connections written as instance %q", b.Instance)
			}
			for uid := range b.Connected {
				connected = append(connected, uid)
			}
			disconnected = append(disconnected, b.Disconnected...)
		}
		return
	}
	r.Disconnected(uid)
	if c, d := conns(); len(c) != 0 || len(d) != 0 {
		t.Fatalf("connections written while one is still open: %x %x", c, d)
	}
	r.Disconnected(uid)
	if c, d := conns(); len(c) != 0 || len(d) != 1 || d[0] != uid {
		t.Fatalf("the last connection closing wrote %x %x", c, d)
	}
	if _, err := r.Report(uid, cred, &protobufs.AgentToServer{}, false, true); err != nil {
		t.Fatal(err)
	}
	if c, d := conns(); len(c) != 1 || c[0] != uid || len(d) != 0 {
		t.Fatalf("a connection opening wrote %x %x", c, d)
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
	inMemory := len(r.agents[uid].history())
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

// With ConnectedSeenInterval, a connected agent's heartbeats are written at
// most that often; its connection closing writes its last-seen time with
// the disconnection, at once.
func TestConnectedSeenInterval(t *testing.T) {
	now := time.Unix(1700000000, 0).UTC()
	var mu sync.Mutex
	cur := now
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return cur }
	st := &recordingStore{}
	r, err := Load(context.Background(), st, nil, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour, ConnectedSeenInterval: time.Minute, Now: clock, Instance: "me"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	uid := uuid.New()
	cred := store.Credential{Kind: "token", ID: "t"}
	var seq uint64
	beat := func(d time.Duration, first bool) {
		mu.Lock()
		cur = cur.Add(d)
		mu.Unlock()
		msg := &protobufs.AgentToServer{SequenceNum: seq}
		if first {
			msg.AgentDescription = &protobufs.AgentDescription{}
		}
		seq++
		if _, err := r.Report(uid, cred, msg, false, first); err != nil {
			t.Fatal(err)
		}
	}
	written := func() (seen []time.Time, disconnected int) {
		st.batches = nil
		if err := r.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, b := range st.batches {
			if ts, ok := b.LastSeen[uid]; ok {
				seen = append(seen, ts)
			}
			disconnected += len(b.Disconnected)
		}
		return
	}
	beat(0, true)
	written() // the registration
	beat(30*time.Second, false)
	if seen, _ := written(); len(seen) != 0 {
		t.Fatalf("a heartbeat 30 s after the last write was written: %v", seen)
	}
	beat(31*time.Second, false)
	if seen, _ := written(); len(seen) != 1 || !seen[0].Equal(now.Add(61*time.Second)) {
		t.Fatalf("a heartbeat a minute after the last write: %v", seen)
	}
	beat(5*time.Second, false)
	mu.Lock()
	cur = cur.Add(time.Second)
	mu.Unlock()
	r.Disconnected(uid)
	if seen, d := written(); d != 1 || len(seen) != 1 || !seen[0].Equal(now.Add(67*time.Second)) {
		t.Fatalf("the close wrote last seen %v with %d disconnections; want the close's time with it", seen, d)
	}
}
