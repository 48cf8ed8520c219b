package pairing

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/store"
)

// TestLoadMatchesUpdates: loading agents at once ends in the state that
// updating them one by one reaches, whatever the order, for a mix of linked,
// ambiguous, mismatched, offline, unclaimed and dangling claims.
func TestLoadMatchesUpdates(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	creds := []store.Credential{credA, credB, certA}
	hosts := []string{"", "h1", "h2"}
	base := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for round := range 50 {
		var agents []Agent
		var collectors []uuid.UUID
		for range 40 {
			a := Agent{UID: uuid.New(), Cred: creds[rng.IntN(len(creds))], Host: hosts[rng.IntN(len(hosts))],
				Online: rng.IntN(2) == 0, LastSeen: base.Add(time.Duration(rng.IntN(1000)) * time.Second)}
			switch rng.IntN(5) {
			case 0, 1:
				a.Role = Collector
				collectors = append(collectors, a.UID)
			case 2, 3:
				a.Role = Updater
			default:
				a.Role = Other
			}
			agents = append(agents, a)
		}
		for i := range agents {
			if agents[i].Role != Updater || rng.IntN(6) == 0 {
				continue // some updaters claim nothing
			}
			agents[i].HasClaim = true
			switch {
			case rng.IntN(8) == 0:
				agents[i].Claim = uuid.New() // an unknown collector
			case rng.IntN(8) == 0:
				agents[i].Claim = agents[rng.IntN(len(agents))].UID // maybe not a collector
			case len(collectors) > 0:
				agents[i].Claim = collectors[rng.IntN(len(collectors))]
			}
		}
		seq := New()
		for _, i := range rng.Perm(len(agents)) {
			seq.Update(agents[i])
		}
		bulk := New()
		bulk.Load(agents)
		if !reflect.DeepEqual(normal(seq.collectorStates()), normal(bulk.collectorStates())) {
			t.Fatalf("round %d: collectors differ:\nupdates %+v\nload    %+v", round, seq.collectorStates(), bulk.collectorStates())
		}
		if !reflect.DeepEqual(seq.updaterStates(), bulk.updaterStates()) {
			t.Fatalf("round %d: updaters differ:\nupdates %+v\nload    %+v", round, seq.updaterStates(), bulk.updaterStates())
		}
		// Later updates work on a loaded index as on any other.
		for i := range agents[:10] {
			agents[i].Online = !agents[i].Online
			if len(seq.Update(agents[i])) != len(bulk.Update(agents[i])) {
				t.Fatalf("round %d: an update after the load reports other changes", round)
			}
		}
		if !reflect.DeepEqual(normal(seq.collectorStates()), normal(bulk.collectorStates())) || !reflect.DeepEqual(seq.updaterStates(), bulk.updaterStates()) {
			t.Fatalf("round %d: states differ after updates following the load", round)
		}
		// Claims that move (or go) leave the index as if the final facts
		// were loaded at once: no stale claimant stays behind.
		for i := range agents {
			if agents[i].Role != Updater || rng.IntN(2) == 0 || len(collectors) == 0 {
				continue
			}
			agents[i].HasClaim = rng.IntN(4) > 0
			agents[i].Claim = uuid.Nil
			if agents[i].HasClaim {
				agents[i].Claim = collectors[rng.IntN(len(collectors))]
			}
			seq.Update(agents[i])
		}
		fresh := New()
		fresh.Load(agents)
		if !reflect.DeepEqual(normal(seq.collectorStates()), normal(fresh.collectorStates())) || !reflect.DeepEqual(seq.updaterStates(), fresh.updaterStates()) {
			t.Fatalf("round %d: states differ after claims moved:\nupdates %+v\nload    %+v", round, seq.collectorStates(), fresh.collectorStates())
		}
		if !reflect.DeepEqual(seq.claimLists(), fresh.claimLists()) {
			t.Fatalf("round %d: claims differ after claims moved:\nupdates %v\nload    %v", round, seq.claimLists(), fresh.claimLists())
		}
	}
}

// normal makes empty and nil claimant lists compare equal.
func normal(m map[uuid.UUID]CollectorState) map[uuid.UUID]CollectorState {
	out := make(map[uuid.UUID]CollectorState, len(m))
	for k, v := range m {
		if len(v.Claimants) == 0 {
			v.Claimants = nil
		}
		out[k] = v
	}
	return out
}

// claimLists is each claimed collector's claimants, sorted.
func (ix *Index) claimLists() map[uuid.UUID][]uuid.UUID {
	out := make(map[uuid.UUID][]uuid.UUID, len(ix.claims.first))
	for c := range ix.claims.first {
		out[c] = slices.SortedFunc(slices.Values(ix.claims.appendTo(nil, c)), func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	}
	for c := range ix.claims.more {
		if _, ok := ix.claims.first[c]; !ok {
			out[c] = nil // further claimants without a first one: never equal to a list
		}
	}
	return out
}

// collectorStates is every collector's state.
func (ix *Index) collectorStates() map[uuid.UUID]CollectorState {
	out := map[uuid.UUID]CollectorState{}
	for _, c := range ix.Collectors() {
		out[c], _ = ix.Collector(c)
	}
	return out
}

// updaterStates is every updater's state.
func (ix *Index) updaterStates() map[uuid.UUID]UpdaterState {
	out := map[uuid.UUID]UpdaterState{}
	for _, u := range ix.Updaters() {
		out[u], _ = ix.Updater(u)
	}
	return out
}

// BenchmarkHeldPerHost reports the heap the index holds per host (a
// collector and its updater), loaded and then updated once each.
func BenchmarkHeldPerHost(b *testing.B) {
	const hosts = 20000
	agents := make([]Agent, 0, 2*hosts)
	now := time.Now()
	for range hosts {
		c := Agent{UID: uuid.New(), Cred: credA, Host: "h", Role: Collector, Online: true, LastSeen: now}
		u := Agent{UID: uuid.New(), Cred: credA, Host: "h", Role: Updater, Online: true, LastSeen: now, Claim: c.UID, HasClaim: true}
		agents = append(agents, c, u)
	}
	var held float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ix := New()
		ix.Load(agents[:len(agents)/2])
		for _, a := range agents[len(agents)/2:] {
			ix.Update(a)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		held = float64(after.HeapAlloc-before.HeapAlloc) / hosts
		runtime.KeepAlive(ix)
	}
	b.ReportMetric(held, "B/host")
}
