package cluster

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testenv"
)

// One of several candidates leads; when its connection ends another takes
// over; when it closes another takes over; a restarted database keeps one
// leader.
func TestOneLeaderAndTakeover(t *testing.T) {
	dsn := testenv.Postgres(t)
	const n = 3
	var leaders [n]*Leader
	var changes [n]atomic.Int32
	for i := range n {
		leaders[i] = NewLeader(open(t, dsn), LeaderOptions{Check: 50 * time.Millisecond})
		leaders[i].Start(func(bool) { changes[i].Add(1) })
		defer leaders[i].Close()
	}
	// exactly one leads, stably. A deposed leader (its session ended) may
	// believe it leads until its next check finds out: it is waited for, not
	// counted; fencing keeps its writes out meanwhile.
	deposed := -1
	one := func(what string) int {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			who, count := -1, 0
			for i, l := range leaders {
				if l != nil && l.Leading() {
					who, count = i, count+1
				}
			}
			if deposed >= 0 && leaders[deposed] != nil && leaders[deposed].Leading() {
				if time.Now().After(deadline) {
					t.Fatalf("%s: the deposed leader still leads", what)
				}
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if count == 1 {
				time.Sleep(200 * time.Millisecond) // and no second one appears
				c2 := 0
				for _, l := range leaders {
					if l != nil && l.Leading() {
						c2++
					}
				}
				if c2 == 1 && leaders[who].Leading() {
					return who
				}
			}
			if count > 1 {
				t.Fatalf("%s: %d leaders at once", what, count)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no leader", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	first := one("at start")
	// Its session ends (as when its process dies): another takes over.
	// The only session advisory lock held on the test's database is the lead.
	terminate(t, dsn, `SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database
		WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()`)
	deposed = first
	second := one("after the leader's session ended")
	deposed = -1 // it may campaign again, and lead once the second closes
	if changes[first].Load() < 2 {
		t.Errorf("the first leader was not told it lost the lead")
	}
	leaders[second].Close()
	leaders[second] = nil
	third := one("after the leader closed")
	if third == second {
		t.Fatal("a closed leader still leads")
	}
}
