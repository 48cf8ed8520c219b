package postgres

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/server/store"
)

// Decisions are written only while the fence's session holds its lock:
// once that session ends (its instance died, or lost its connection) the
// same writes fail with ErrNotLeader and change nothing; writes of agents
// are not fenced.
func TestFencedWrites(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	db := open(t, dsn)
	defer db.Close()
	const key int64 = 0x6d79_7261_7e57
	holder, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var held bool
	if err := holder.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&held); err != nil || !held {
		t.Fatalf("lock: %v %v", held, err)
	}
	var leading atomic.Bool
	leading.Store(true)
	pid := holder.PgConn().PID()
	db.SetFence(func() (uint32, int64, bool) { return pid, key, leading.Load() })
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
	holder.Close(ctx) // the session ends; this instance has not noticed yet
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
	leading.Store(false)
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
}
