package storetest

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// writerBatch is writer w's round r over agents: every agent upserted (in
// an order of its own), and events with sequence numbers no other writer
// uses.
func writerBatch(w, r, agents int, now time.Time) store.Batch {
	rng := rand.New(rand.NewPCG(uint64(w), uint64(r)))
	b := store.Batch{Events: map[[16]byte][]store.Event{}}
	for _, i := range rng.Perm(agents) {
		a := agent(i, now)
		b.Agents = append(b.Agents, a)
		b.Events[a.UID] = events(i, uint64(w*1000+r*10), uint64(w*1000+r*10+1), now)
	}
	return b
}

// checkConcurrentResult: every agent present once and unchanged, every
// event of every writer kept, and last seen the newest any writer gave.
func checkConcurrentResult(t *testing.T, db store.Store, agents, writers, rounds int, now time.Time) {
	t.Helper()
	got, evs := loadAll(t, db, 1<<20)
	if len(got) != agents {
		t.Fatalf("%d agents, want %d", len(got), agents)
	}
	for i := range agents {
		w := agent(i, now)
		w.LastSeen = now.Add(time.Duration(writers) * time.Hour)
		if g := got[w.UID]; !sameAgent(g, w) {
			t.Fatalf("agent %d read back as %+v, want %+v", i, g, w)
		}
		if n := len(evs[w.UID]); n != writers*rounds*2 {
			t.Fatalf("agent %d has %d events, want %d", i, n, writers*rounds*2)
		}
	}
}

// testConcurrentWriters: writers flushing overlapping batches at the same
// time through one handle all succeed, and nothing is lost.
func testConcurrentWriters(t *testing.T, h *handle) {
	const agents, writers, rounds = 200, 8, 5
	now := time.Unix(1700000000, 0).UTC()
	concurrently(t, writers, func(w int) error {
		for r := range rounds {
			if err := h.db.Write(ctx, writerBatch(w, r, agents, now)); err != nil {
				return err
			}
		}
		return nil
	})
	heartbeats(t, []store.Store{h.db}, writers, agents, now)
	checkConcurrentResult(t, h.restart(), agents, writers, rounds, now)
}

// testTwoHandles: two handles on one database (two myriarchd instances)
// writing overlapping batches at the same time.
func testTwoHandles(t *testing.T, h *handle) {
	const agents, writers, rounds = 200, 4, 5
	second := h.open(t)
	defer second.Close()
	dbs := []store.Store{h.db, second}
	now := time.Unix(1700000000, 0).UTC()
	concurrently(t, writers, func(w int) error {
		for r := range rounds {
			if err := dbs[w%2].Write(ctx, writerBatch(w, r, agents, now)); err != nil {
				return err
			}
		}
		return nil
	})
	heartbeats(t, dbs, writers, agents, now)
	checkConcurrentResult(t, second, agents, writers, rounds, now)
	checkConcurrentResult(t, h.db, agents, writers, rounds, now)
}

// heartbeats has writer w report every agent seen at now + w hours
// (writers 1..n, concurrently, through the handles in turn).
func heartbeats(t *testing.T, dbs []store.Store, writers, agents int, now time.Time) {
	t.Helper()
	concurrently(t, writers, func(w int) error {
		seen := map[[16]byte]time.Time{}
		for i := range agents {
			seen[agent(i, now).UID] = now.Add(time.Duration(w+1) * time.Hour)
		}
		return dbs[w%len(dbs)].Write(ctx, store.Batch{LastSeen: seen})
	})
}

func concurrently(t *testing.T, n int, fn func(w int) error) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() { errs[w] = fn(w) })
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", w, err)
		}
	}
}
