package storetest

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

func testOffers(t *testing.T, h *handle) {
	a, b := [16]byte{1}, [16]byte{2}
	must(t, h.db.WriteOffers(ctx, map[[16]byte][]byte{a: []byte(`{"state":"offered"}`), b: []byte(`{"state":"waiting_wave"}`)}))
	must(t, h.db.WriteOffers(ctx, map[[16]byte][]byte{b: []byte(`{"state":"offered"}`)}))
	must(t, h.db.WriteOffers(ctx, nil))
	h.beforeAndAfterRestart(func(db store.Store) {
		got, err := db.LoadOffers(ctx)
		must(t, err)
		want := map[[16]byte]string{a: `{"state":"offered"}`, b: `{"state":"offered"}`}
		if len(got) != len(want) {
			t.Fatalf("%d records, want %d", len(got), len(want))
		}
		for uid, w := range want {
			if string(got[uid]) != w {
				t.Errorf("record %x = %q, want %q", uid, got[uid], w)
			}
		}
	})
}

// Reports are upserted with the agents' rows; an older report never
// replaces a newer one of the same agent and feature.
func testReports(t *testing.T, h *handle) {
	now := time.Unix(1700000000, 5).UTC()
	a, b := agent(1, now), agent(2, now)
	rep := func(ag store.Agent, feature string, at time.Time, data string) store.Report {
		return store.Report{UID: ag.UID, Feature: feature, At: at, Data: []byte(data)}
	}
	must(t, h.db.Write(ctx, store.Batch{Agents: []store.Agent{a, b}, Reports: []store.Report{
		rep(a, "packages", now, "p1"), rep(a, "config", now, "c1"), rep(b, "config", now, "b1"),
	}}))
	must(t, h.db.Write(ctx, store.Batch{Reports: []store.Report{
		rep(a, "packages", now.Add(time.Second), "p2"),
		rep(a, "config", now.Add(-time.Second), "older"),    // left out
		rep(b, "config", now.Add(time.Second), "b2"),        // the newest of two in one batch wins
		rep(b, "config", now.Add(time.Millisecond), "b1.5"), // ...whatever their order
	}}))
	type key struct {
		uid     [16]byte
		feature string
	}
	want := map[key]string{{a.UID, "packages"}: "p2", {a.UID, "config"}: "c1", {b.UID, "config"}: "b2"}
	h.beforeAndAfterRestart(func(db store.Store) {
		all, err := db.LoadReports(ctx, nil)
		must(t, err)
		got := map[key]string{}
		for _, r := range all {
			got[key{r.UID, r.Feature}] = string(r.Data)
			if r.Feature == "packages" && !r.At.Equal(now.Add(time.Second)) {
				t.Errorf("report time %v, want %v", r.At, now.Add(time.Second))
			}
		}
		if !maps.Equal(got, want) {
			t.Fatalf("reports %v, want %v", got, want)
		}
		some, err := db.LoadReports(ctx, [][16]byte{b.UID, {9}})
		must(t, err)
		if len(some) != 1 || some[0].UID != b.UID || string(some[0].Data) != "b2" {
			t.Fatalf("reports of b: %+v", some)
		}
		none, err := db.LoadReports(ctx, [][16]byte{})
		must(t, err)
		if len(none) != 0 {
			t.Fatalf("reports of no agent: %+v", none)
		}
	})
}

// Relayed events wait, in order, until taken; taking removes them.
func testRelayed(t *testing.T, h *handle) {
	now := time.Unix(1700000000, 0).UTC()
	a, b := [16]byte{1}, [16]byte{2}
	ev := func(i int, typ string) store.Event {
		return store.Event{Time: now.Add(time.Duration(i) * time.Second), Type: typ, Message: "msg " + typ + "\x00ü"}
	}
	must(t, h.db.Write(ctx, store.Batch{Relayed: map[[16]byte][]store.Event{a: {ev(1, "x"), ev(2, "y")}, b: {ev(1, "z")}}}))
	must(t, h.db.Write(ctx, store.Batch{Relayed: map[[16]byte][]store.Event{a: {ev(3, "w")}}}))
	db := h.restart()
	waiting, err := db.RelayedAgents(ctx)
	must(t, err)
	slices.SortFunc(waiting, func(x, y [16]byte) int { return int(x[0]) - int(y[0]) })
	if !slices.Equal(waiting, [][16]byte{a, b}) {
		t.Fatalf("agents with relayed events: %x", waiting)
	}
	got, err := db.TakeRelayed(ctx, [][16]byte{a, {7}})
	must(t, err)
	if len(got) != 1 || len(got[a]) != 3 {
		t.Fatalf("taken: %+v", got)
	}
	for i, typ := range []string{"x", "y", "w"} {
		e := got[a][i]
		if e.Type != typ || !e.Time.Equal(ev(i+1, typ).Time) || e.Message != "msg "+typ+"\x00ü" {
			t.Errorf("event %d = %+v, want type %s", i, e, typ)
		}
	}
	if again, err := db.TakeRelayed(ctx, [][16]byte{a}); err != nil || len(again) != 0 {
		t.Fatalf("taken twice: %+v %v", again, err)
	}
	waiting, err = db.RelayedAgents(ctx)
	must(t, err)
	if !slices.Equal(waiting, [][16]byte{b}) {
		t.Fatalf("agents with relayed events after taking a's: %x", waiting)
	}
}

// A row names the instance an agent's WebSocket is open to and when it
// opened: the newest connection written (at the same time, the one to the
// instance whose name sorts last), not the last written; a disconnection
// clears it only when it still names the instance that writes it. Row
// upserts leave it as it is.
func testConnections(t *testing.T, h *handle) {
	now := time.Unix(1700000000, 0).UTC()
	a, b, c, d := agent(1, now), agent(2, now), agent(3, now), agent(4, now)
	all := map[[16]byte]time.Time{a.UID: now, b.UID: now, c.UID: now, d.UID: now}
	must(t, h.db.Write(ctx, store.Batch{Agents: []store.Agent{a, b, c, d}, Instance: "x", Connected: all}))
	type conn struct {
		instance string
		at       time.Time
	}
	connections := func(db store.Store) map[[16]byte]conn {
		got, _ := loadAll(t, db, 0)
		out := map[[16]byte]conn{}
		for _, x := range []store.Agent{a, b, c, d} {
			out[x.UID] = conn{got[x.UID].Instance, got[x.UID].ConnectedAt}
		}
		return out
	}
	check := func(db store.Store, when string, want map[[16]byte]conn) {
		t.Helper()
		got := connections(db)
		for uid, w := range want {
			if got[uid].instance != w.instance || !got[uid].at.Equal(w.at) {
				t.Fatalf("%s: agent %x on %q since %v, want %q since %v", when, uid[:3], got[uid].instance, got[uid].at, w.instance, w.at)
			}
		}
	}
	check(h.db, "after connecting to x", map[[16]byte]conn{a.UID: {"x", now}, b.UID: {"x", now}, c.UID: {"x", now}, d.UID: {"x", now}})
	a.LastSeen = now.Add(time.Second)
	// b moves to y; c's connection to y opened before x's.
	must(t, h.db.Write(ctx, store.Batch{Agents: []store.Agent{a}, Instance: "y",
		Connected: map[[16]byte]time.Time{b.UID: now.Add(time.Second), c.UID: now.Add(-time.Second)}}))
	// Connections that opened as x's did: to w (sorts before x) and z (after).
	must(t, h.db.Write(ctx, store.Batch{Instance: "w", Connected: map[[16]byte]time.Time{a.UID: now}}))
	must(t, h.db.Write(ctx, store.Batch{Instance: "z", Connected: map[[16]byte]time.Time{d.UID: now}}))
	check(h.db, "after the others' connections", map[[16]byte]conn{
		a.UID: {"x", now}, b.UID: {"y", now.Add(time.Second)}, c.UID: {"x", now}, d.UID: {"z", now}})
	// x sees all close.
	must(t, h.db.Write(ctx, store.Batch{Instance: "x", Disconnected: [][16]byte{a.UID, b.UID, c.UID, d.UID}}))
	h.beforeAndAfterRestart(func(db store.Store) {
		check(db, "after x's disconnections", map[[16]byte]conn{
			a.UID: {"", time.Time{}}, b.UID: {"y", now.Add(time.Second)}, c.UID: {"", time.Time{}}, d.UID: {"z", now}})
	})
}
