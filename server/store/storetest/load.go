package storetest

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// loadAgents is the number of agents of the load path:
// MYRIARCH_LOAD_AGENTS when set (BENCHMARKS.md measures 100 000), else
// 4 000: two batches, a flush of all and a restart, the same statements as
// at any size (the store sends a batch as one statement of arrays).
func loadAgents(t *testing.T) int {
	s := os.Getenv("MYRIARCH_LOAD_AGENTS")
	if s == "" {
		return 4000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("MYRIARCH_LOAD_AGENTS=%q: want a positive integer", s)
	}
	return n
}

// testLoadPath is what a start of a large fleet does to the store:
// registrations flushed in batches of 10 000 (or two halves when fewer;
// each agent with its first events), one heartbeat flush of every agent, then a restart that
// loads them all. The durations are logged (no thresholds: BENCHMARKS.md
// records the figures).
func testLoadPath(t *testing.T, h *handle) {
	n := loadAgents(t)
	now := time.Unix(1700000000, 0).UTC()
	start := time.Now()
	size := min(10000, max(1, (n+1)/2))
	for lo := 0; lo < n; lo += size {
		b := store.Batch{Events: map[[16]byte][]store.Event{}, KeepEvent: 200}
		for i := lo; i < min(lo+size, n); i++ {
			a := agent(i, now)
			b.Agents = append(b.Agents, a)
			b.Events[a.UID] = events(i, 1, 2, now)
		}
		must(t, h.db.Write(ctx, b))
	}
	wrote := time.Since(start)
	start = time.Now()
	seen := make(map[[16]byte]time.Time, n)
	later := now.Add(time.Hour)
	for i := range n {
		seen[agent(i, now).UID] = later
	}
	must(t, h.db.Write(ctx, store.Batch{LastSeen: seen}))
	beat := time.Since(start)
	db := h.restart()
	start = time.Now()
	got, evs := loadAll(t, db, 200)
	loaded := time.Since(start)
	if len(got) != n || len(evs) != n {
		t.Fatalf("loaded %d agents and %d event lists, want %d", len(got), len(evs), n)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		w := agent(i, now)
		w.LastSeen = later
		if !sameAgent(got[w.UID], w) || !sameEvents(map[[16]byte][]store.Event{w.UID: evs[w.UID]}, map[[16]byte][]store.Event{w.UID: events(i, 1, 2, now)}) {
			t.Fatalf("agent %d read back as %+v with events %v", i, got[w.UID], evs[w.UID])
		}
	}
	t.Logf("%d agents: registered in %s, one heartbeat flush of all in %s, loaded in %s", n, wrote, beat, loaded)
}
