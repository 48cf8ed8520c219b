package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/server/store"
)

// Decisions are written only while this instance's candidacy holds the
// lead: once its session ends (its instance died, or lost its connection)
// the same writes fail with ErrNotLeader and change nothing; so do they
// once it gives the lead up; writes of agents are not fenced.
func TestFencedWrites(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	db := open(t, dsn)
	defer db.Close()
	c, err := db.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if held, err := c.Hold(ctx); err != nil || !held {
		t.Fatalf("the only candidate does not lead: %v %v", held, err)
	}
	if held, err := c.Hold(ctx); err != nil || !held {
		t.Fatalf("the leader does not keep the lead: %v %v", held, err)
	}
	other := open(t, dsn)
	defer other.Close()
	rival, err := other.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rival.Close()
	if held, err := rival.Hold(ctx); err != nil || held {
		t.Fatalf("a second candidate leads too: %v %v", held, err)
	}
	uid := [16]byte{1}
	writes := map[string]func(v string) error{
		"offers": func(v string) error { return db.WriteOffers(ctx, map[[16]byte][]byte{uid: []byte(v)}) },
		"configs": func(v string) error {
			return db.WriteConfigs(ctx, store.ConfigBatch{Assignments: map[[16]byte][]byte{uid: []byte(v)}})
		},
		"state": func(v string) error { return db.PutState(ctx, "rollout/edge", []byte(v)) },
	}
	for name, w := range writes {
		if err := w("leader"); err != nil {
			t.Fatalf("%s while holding the lock: %v", name, err)
		}
	}
	if err := other.WriteOffers(ctx, map[[16]byte][]byte{uid: []byte("rival")}); !errors.Is(err, store.ErrNotLeader) {
		t.Fatalf("a write of the instance that does not lead: %v, want ErrNotLeader", err)
	}
	// The session ends; this instance has not noticed yet.
	pid := db.leadPID.Load()
	if _, err := other.pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, int64(pid)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ended := false; !ended; {
		if time.Now().After(deadline) {
			t.Fatal("the lock's session never ended")
		}
		if err := db.pool.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)`, int64(pid)).Scan(&ended); err != nil {
			t.Fatal(err)
		}
	}
	for name, w := range writes {
		if err := w("former leader"); !errors.Is(err, store.ErrNotLeader) {
			t.Errorf("%s after the lock's session ended: %v, want ErrNotLeader", name, err)
		}
	}
	if held, err := c.Hold(ctx); err == nil || held {
		t.Fatalf("Hold after the session ended: %v %v, want an error", held, err)
	}
	if err := db.DeleteState(ctx, "rollout/edge"); !errors.Is(err, store.ErrNotLeader) {
		t.Errorf("delete state while not leading: %v", err)
	}
	offers, _ := db.LoadOffers(ctx)
	assignments, _, _ := db.LoadConfigs(ctx)
	state, _ := db.GetState(ctx, "rollout/edge")
	if string(offers[uid]) != "leader" || string(assignments[uid]) != "leader" || string(state) != "leader" {
		t.Fatalf("a fenced write changed the store: %q %q %q", offers[uid], assignments[uid], state)
	}
	if err := db.Write(ctx, store.Batch{Reports: []store.Report{{UID: uid, Feature: "packages", Data: []byte("x")}}}); err != nil {
		t.Fatalf("an agent's write is not fenced: %v", err)
	}
	// The rival takes the lead over.
	if held, err := rival.Hold(ctx); err != nil || !held {
		t.Fatalf("the rival after the leader's session ended: %v %v", held, err)
	}
	if err := other.PutState(ctx, "rollout/edge", []byte("next leader")); err != nil {
		t.Fatalf("a write of the next leader: %v", err)
	}
}

// Instances say they live; those that stop are forgotten, as are those
// silent for long; agents connected to an instance are not in SeenSince
// (their instance's lease counts), those connected to none are.
func TestInstancesLiveAndSeenSince(t *testing.T) {
	ctx := context.Background()
	db := open(t, testenv.Postgres(t))
	defer db.Close()
	t0 := time.Unix(1700000000, 0).UTC()
	for id, at := range map[string]time.Time{"a": t0, "b": t0.Add(time.Second), "old": t0.Add(-48 * time.Hour)} {
		if err := db.Beat(ctx, id, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Beat(ctx, "a", t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	live, err := db.Instances(ctx, t0.Add(-time.Minute))
	if err != nil || len(live) != 2 || !live["a"].Equal(t0.Add(2*time.Second)) || !live["b"].Equal(t0.Add(time.Second)) {
		t.Fatalf("live instances: %v %v", live, err)
	}
	if err := db.ForgetInstance(ctx, "b", t0.Add(-24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	all, _ := db.Instances(ctx, time.Unix(0, 0))
	if len(all) != 1 || all["a"].IsZero() {
		t.Fatalf("after b stopped: %v, want a only (old forgotten too)", all)
	}

	ws, http := [16]byte{1}, [16]byte{2}
	rows := []store.Agent{{UID: ws, Kind: "collector", FirstSeen: t0, LastSeen: t0}, {UID: http, Kind: "collector", FirstSeen: t0, LastSeen: t0}}
	if err := db.Write(ctx, store.Batch{Agents: rows, Instance: "a", Connected: map[[16]byte]time.Time{ws: t0}}); err != nil {
		t.Fatal(err)
	}
	seen, err := db.SeenSince(ctx, t0.Add(-time.Second))
	if err != nil || len(seen) != 1 || !seen[http].Equal(t0) {
		t.Fatalf("SeenSince: %v %v; want only the agent connected to no instance", seen, err)
	}
}

// Reading agents by UID gives their rows and newest events; with one event
// kept, the newest of each (what merging another instance's agents needs).
func TestLoadAgentsByUID(t *testing.T) {
	ctx := context.Background()
	db := open(t, testenv.Postgres(t))
	defer db.Close()
	t0 := time.Unix(1700000000, 0).UTC()
	a, b, c := [16]byte{1}, [16]byte{2}, [16]byte{3}
	ev := func(seq uint64) store.Event {
		return store.Event{Seq: seq, Time: t0.Add(time.Duration(seq)), Type: "t", Message: fmt.Sprint("m", seq)}
	}
	if err := db.Write(ctx, store.Batch{Agents: []store.Agent{{UID: a, LastSeen: t0}, {UID: b, LastSeen: t0}, {UID: c, LastSeen: t0}},
		Events: map[[16]byte][]store.Event{a: {ev(1), ev(2), ev(5)}, b: {ev(3)}}}); err != nil {
		t.Fatal(err)
	}
	for _, keep := range []int{1, 200} {
		agents, events, err := db.LoadAgentsByUID(ctx, [][16]byte{a, b, c, {9}}, keep)
		if err != nil || len(agents) != 3 {
			t.Fatalf("keep %d: %d agents, %v", keep, len(agents), err)
		}
		wantA := []uint64{5}
		if keep > 1 {
			wantA = []uint64{1, 2, 5}
		}
		var gotA []uint64
		for _, e := range events[a] {
			gotA = append(gotA, e.Seq)
		}
		if !slices.Equal(gotA, wantA) || len(events[b]) != 1 || events[b][0].Message != "m3" || len(events[c]) != 0 {
			t.Fatalf("keep %d: events %v", keep, events)
		}
	}
}
