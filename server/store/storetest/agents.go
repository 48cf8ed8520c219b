package storetest

import (
	"bytes"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// agent makes a distinct, fully populated record for i.
func agent(i int, now time.Time) store.Agent {
	return store.Agent{
		UID:          [16]byte{byte(i >> 16), byte(i >> 8), byte(i), 0xa5},
		Credential:   store.Credential{Kind: []string{"token", "certificate"}[i%2], ID: fmt.Sprint("cred-", i%7)},
		Kind:         []string{"collector", "updater", "unknown"}[i%3],
		Description:  []byte(fmt.Sprintf("desc-%d\x00\xff", i)),
		Capabilities: uint64(i) | 1<<63, // the top bit survives a signed column
		Health:       []byte{1, byte(i)},
		TokenLabels:  map[string]string{"i": fmt.Sprint(i), "site.id": "par-01"},
		FirstSeen:    now.Add(-time.Duration(i) * time.Nanosecond),
		LastSeen:     now.Add(time.Duration(i) * time.Millisecond),
		Extra:        []byte(fmt.Sprintf(`{"n":%d}`, i)),
	}
}

// sameAgent compares records as the registry reads them: an empty byte
// field or label map is the same as a missing one.
func sameAgent(a, b store.Agent) bool {
	return a.UID == b.UID && a.Credential == b.Credential && a.Kind == b.Kind &&
		bytes.Equal(a.Description, b.Description) && a.Capabilities == b.Capabilities &&
		bytes.Equal(a.Health, b.Health) && maps.Equal(a.TokenLabels, b.TokenLabels) &&
		a.FirstSeen.Equal(b.FirstSeen) && a.LastSeen.Equal(b.LastSeen) && bytes.Equal(a.Extra, b.Extra)
}

// loadAll reads every agent by UID, failing on a duplicate.
func loadAll(t *testing.T, db store.Store, keep int) (map[[16]byte]store.Agent, map[[16]byte][]store.Event) {
	t.Helper()
	list, events, err := db.LoadAgents(ctx, keep)
	must(t, err)
	out := make(map[[16]byte]store.Agent, len(list))
	for _, a := range list {
		if _, dup := out[a.UID]; dup {
			t.Fatalf("agent %x loaded twice", a.UID)
		}
		out[a.UID] = a
	}
	for uid, evs := range events {
		if len(evs) == 0 {
			t.Fatalf("agent %x has an empty event list (want no entry)", uid)
		}
	}
	return out, events
}

func testAgentsRoundTrip(t *testing.T, h *handle) {
	now := time.Unix(1700000000, 987654321).UTC()
	var want []store.Agent
	for i := range 20 {
		want = append(want, agent(i, now))
	}
	// Empty fields: no description yet, no health, no labels, no extra.
	want = append(want, store.Agent{UID: [16]byte{0xee}, Credential: store.Credential{Kind: "token", ID: "x"},
		Kind: "unknown", FirstSeen: now, LastSeen: now})
	must(t, h.db.Write(ctx, store.Batch{Agents: want}))
	// An upsert replaces every field of the row.
	changed := agent(3, now.Add(time.Hour))
	changed.UID = want[3].UID
	changed.Kind, changed.Description, changed.Extra = "collector", []byte("new"), nil
	changed.TokenLabels = nil
	want[3] = changed
	// A batch naming an agent twice keeps the last.
	first := changed
	first.Kind = "updater"
	must(t, h.db.Write(ctx, store.Batch{Agents: []store.Agent{first, changed}}))
	h.beforeAndAfterRestart(func(db store.Store) {
		got, events := loadAll(t, db, 10)
		if len(got) != len(want) || len(events) != 0 {
			t.Fatalf("%d agents and %d event lists, want %d and 0", len(got), len(events), len(want))
		}
		for _, w := range want {
			if g := got[w.UID]; !sameAgent(g, w) {
				t.Errorf("agent %x read back as\n%+v\nwant\n%+v", w.UID, g, w)
			}
		}
	})
}

func testLastSeen(t *testing.T, h *handle) {
	now := time.Unix(1700000000, 0).UTC()
	a, b := agent(1, now), agent(2, now)
	must(t, h.db.Write(ctx, store.Batch{Agents: []store.Agent{a, b}}))
	later, earlier := a.LastSeen.Add(time.Minute), b.LastSeen.Add(-time.Minute)
	unknown := [16]byte{0xff}
	must(t, h.db.Write(ctx, store.Batch{LastSeen: map[[16]byte]time.Time{a.UID: later, b.UID: earlier, unknown: later}}))
	got, _ := loadAll(t, h.restart(), 0)
	if len(got) != 2 {
		t.Fatalf("%d agents, want 2 (a heartbeat of an unknown agent adds no row)", len(got))
	}
	if !got[a.UID].LastSeen.Equal(later) || !got[b.UID].LastSeen.Equal(b.LastSeen) {
		t.Fatalf("last seen %v and %v, want %v and %v (never backwards)", got[a.UID].LastSeen, got[b.UID].LastSeen, later, b.LastSeen)
	}
	if !sameAgent(got[b.UID], b) {
		t.Fatalf("a heartbeat changed more than last seen: %+v", got[b.UID])
	}
}

// testStaleUpsertIgnored: a row older than the stored one (by when it
// changed; its last-seen time when that is not set) is not written; one as
// new or newer is.
func testStaleUpsertIgnored(t *testing.T, h *handle) {
	now := time.Unix(1700000000, 0).UTC()
	cur := agent(1, now)
	must(t, h.db.Write(ctx, store.Batch{Agents: []store.Agent{cur}}))
	stale := cur
	stale.LastSeen, stale.Description, stale.Extra = cur.LastSeen.Add(-time.Second), []byte("old"), []byte(`{"old":true}`)
	same := cur
	same.Extra = []byte(`{"same":true}`)
	must(t, h.db.Write(ctx, store.Batch{Agents: []store.Agent{stale}}))
	got, _ := loadAll(t, h.db, 0)
	if !sameAgent(got[cur.UID], cur) {
		t.Fatalf("an older row overwrote the stored one: %+v", got[cur.UID])
	}
	must(t, h.db.Write(ctx, store.Batch{Agents: []store.Agent{same}}))
	got, _ = loadAll(t, h.restart(), 0)
	if !sameAgent(got[cur.UID], same) {
		t.Fatalf("a row as new as the stored one was not written: %+v", got[cur.UID])
	}
}

// testRowsOrderedByChange: rows are ordered by when they changed, not by
// last seen. An agent's own instance writes its new description (changed
// after the stored row) although another instance has meanwhile moved its
// last-seen time on (it saw the agent's old connection close late), and
// that instance's copy, changed earlier, is not written however late its
// last-seen time; the later last-seen time stays.
func testRowsOrderedByChange(t *testing.T, h *handle) {
	now := time.Unix(1700000000, 0).UTC()
	stored := agent(1, now)
	must(t, h.db.Write(ctx, store.Batch{Agents: []store.Agent{stored}}))
	closedLate := stored.LastSeen.Add(time.Minute)
	must(t, h.db.Write(ctx, store.Batch{LastSeen: map[[16]byte]time.Time{stored.UID: closedLate}}))

	own := stored
	own.Description, own.LastSeen = []byte("reconnected with a new version"), stored.LastSeen.Add(30*time.Second)
	must(t, h.db.Write(ctx, store.Batch{Agents: []store.Agent{own}}))
	stale := stored
	stale.Description, stale.LastSeen, stale.Changed = []byte("the old copy"), closedLate.Add(time.Minute), stored.LastSeen
	must(t, h.db.Write(ctx, store.Batch{Agents: []store.Agent{stale}}))

	h.beforeAndAfterRestart(func(db store.Store) {
		got, _ := loadAll(t, db, 0)
		want := own
		want.LastSeen = closedLate
		if g := got[stored.UID]; !sameAgent(g, want) {
			t.Fatalf("read back %q last seen %v, want %q last seen %v", g.Description, g.LastSeen, want.Description, want.LastSeen)
		}
	})
}

// testEventsOnlyRow: a row written only to accompany events (EventsOnly)
// is stored when the agent has none, and otherwise changes nothing of the
// stored one, however new its last-seen time: the instance writing it may
// hold an older copy of an agent connected to another instance.
func testEventsOnlyRow(t *testing.T, h *handle) {
	now := time.Unix(1700000000, 0).UTC()
	cur, missing := agent(1, now), agent(2, now)
	must(t, h.db.Write(ctx, store.Batch{Agents: []store.Agent{cur}}))
	stale := cur
	stale.LastSeen, stale.Description, stale.Kind, stale.EventsOnly = now.Add(time.Minute), []byte("older description"), "updater", true
	fresh := missing
	fresh.EventsOnly = true
	ev := []store.Event{{Seq: 1, Time: now, Type: "offer_offered", Message: "offer up_to_date → offered"}}
	must(t, h.db.Write(ctx, store.Batch{Agents: []store.Agent{stale, fresh}, KeepEvent: 10,
		Events: map[[16]byte][]store.Event{cur.UID: ev, missing.UID: ev}}))
	for _, db := range []store.Store{h.db, h.restart()} {
		got, events := loadAll(t, db, 10)
		if !sameAgent(got[cur.UID], cur) {
			t.Fatalf("a row accompanying events changed the stored one: %+v", got[cur.UID])
		}
		if a, ok := got[missing.UID]; !ok || !sameAgent(a, missing) {
			t.Fatalf("a row accompanying events of an unstored agent: %v %+v", ok, a)
		}
		if len(events[cur.UID]) != 1 || len(events[missing.UID]) != 1 {
			t.Fatalf("events %d and %d, want 1 and 1", len(events[cur.UID]), len(events[missing.UID]))
		}
	}
}

// testDelete: a deleted agent leaves no row, event, configuration
// assignment, offer record, report or relayed event; one deleted and registered again in one batch is stored anew.
func testDelete(t *testing.T, h *handle) {
	now := time.Unix(1700000000, 0).UTC()
	gone, back, kept := agent(1, now), agent(2, now), agent(3, now)
	ev := []store.Event{{Seq: 1, Time: now, Type: "registered", Message: "x"}}
	must(t, h.db.Write(ctx, store.Batch{Agents: []store.Agent{gone, back, kept},
		Events: map[[16]byte][]store.Event{gone.UID: ev, back.UID: ev, kept.UID: ev}}))
	must(t, h.db.WriteConfigs(ctx, store.ConfigBatch{Assignments: map[[16]byte][]byte{gone.UID: []byte(`{"assigned":"h1"}`)}}))
	must(t, h.db.WriteOffers(ctx, map[[16]byte][]byte{gone.UID: []byte(`{"state":"offered"}`)}))
	must(t, h.db.Write(ctx, store.Batch{Reports: []store.Report{{UID: gone.UID, Feature: "config", At: now, Data: []byte("r")}},
		Relayed: map[[16]byte][]store.Event{gone.UID: ev}}))
	again := back
	again.Kind, again.LastSeen = "collector", now.Add(-time.Hour) // older: a stale upsert would be ignored
	must(t, h.db.Write(ctx, store.Batch{Delete: [][16]byte{gone.UID, back.UID}, Agents: []store.Agent{again}}))
	for _, db := range []store.Store{h.db, h.restart()} {
		agents, events := loadAll(t, db, 10)
		if _, ok := agents[gone.UID]; ok || len(events[gone.UID]) != 0 {
			t.Errorf("deleted agent still stored: %v, %d events", ok, len(events[gone.UID]))
		}
		if a, ok := agents[back.UID]; !ok || !sameAgent(a, again) || len(events[back.UID]) != 0 {
			t.Errorf("agent deleted and registered again: %v %+v, %d events", ok, a, len(events[back.UID]))
		}
		if _, ok := agents[kept.UID]; !ok || len(events[kept.UID]) != 1 {
			t.Error("an agent not deleted was touched")
		}
		if as, _, err := db.LoadConfigs(ctx); err != nil || len(as) != 0 {
			t.Errorf("assignments left of a deleted agent: %v %v", as, err)
		}
		if offers, err := db.LoadOffers(ctx); err != nil || len(offers) != 0 {
			t.Errorf("offer records left of a deleted agent: %v %v", offers, err)
		}
		if reports, err := db.LoadReports(ctx, nil); err != nil || len(reports) != 0 {
			t.Errorf("reports left of a deleted agent: %v %v", reports, err)
		}
		if waiting, err := db.RelayedAgents(ctx); err != nil || len(waiting) != 0 {
			t.Errorf("relayed events left of a deleted agent: %v %v", waiting, err)
		}
	}
}
