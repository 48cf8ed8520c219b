package storetest

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

func events(uidSeed int, from, to uint64, now time.Time) []store.Event {
	var out []store.Event
	for s := from; s <= to; s++ {
		out = append(out, store.Event{Seq: s, Time: now.Add(time.Duration(s)), Type: fmt.Sprint("t", s%3), Message: fmt.Sprint("m", uidSeed, "-", s)})
	}
	return out
}

// testEventsBounded: Write keeps each agent's events within KeepEvent
// sequence numbers of the newest it wrote, over several batches.
func testEventsBounded(t *testing.T, h *handle) {
	now := time.Unix(1700000000, 0).UTC()
	a, b := agent(1, now), agent(2, now)
	must(t, h.db.Write(ctx, store.Batch{Agents: []store.Agent{a, b}, KeepEvent: 3,
		Events: map[[16]byte][]store.Event{a.UID: events(1, 1, 5, now), b.UID: events(2, 1, 2, now)}}))
	must(t, h.db.Write(ctx, store.Batch{KeepEvent: 3, Events: map[[16]byte][]store.Event{a.UID: events(1, 6, 7, now)}}))
	h.beforeAndAfterRestart(func(db store.Store) {
		// Load more than the bound: what is stored is bounded by Write.
		_, got := loadAll(t, db, 100)
		want := map[[16]byte][]store.Event{a.UID: events(1, 5, 7, now), b.UID: events(2, 1, 2, now)}
		if !sameEvents(got, want) {
			t.Fatalf("events\n%v\nwant\n%v", got, want)
		}
	})
}

// testLoadKeepsNewestEvents: LoadAgents(keep) returns, per agent, the
// events within keep sequence numbers of its newest, oldest first, over
// agents with none, fewer than kept, gaps in their numbers, and more.
func testLoadKeepsNewestEvents(t *testing.T, h *handle) {
	now := time.Unix(1700000000, 0).UTC()
	rng := rand.New(rand.NewPCG(3, 4))
	b := store.Batch{Events: map[[16]byte][]store.Event{}}
	for i := range 60 {
		a := agent(i, now)
		b.Agents = append(b.Agents, a)
		seq := uint64(0)
		for range rng.IntN(12) {
			seq += uint64(1 + rng.IntN(3)) // gaps
			b.Events[a.UID] = append(b.Events[a.UID], store.Event{Seq: seq, Time: now.Add(time.Duration(seq)), Type: fmt.Sprint("t", seq%4), Message: fmt.Sprint("m", i, seq)})
		}
	}
	must(t, h.db.Write(ctx, b))
	for _, keep := range []int{0, 1, 5, 200} {
		got, events := loadAll(t, h.db, keep)
		if len(got) != len(b.Agents) {
			t.Fatalf("keep %d: %d agents, want %d", keep, len(got), len(b.Agents))
		}
		want := map[[16]byte][]store.Event{}
		for uid, evs := range b.Events {
			newest := evs[len(evs)-1].Seq
			for _, e := range evs {
				if int64(e.Seq) > int64(newest)-int64(keep) {
					want[uid] = append(want[uid], e)
				}
			}
		}
		if !sameEvents(events, want) {
			t.Fatalf("keep %d: events\n%v\nwant\n%v", keep, events, want)
		}
		// One agent's history, as LoadAgents keeps it.
		one := map[[16]byte][]store.Event{}
		for uid := range b.Events {
			evs, err := h.db.LoadEvents(ctx, uid, keep)
			must(t, err)
			if len(evs) > 0 {
				one[uid] = evs
			}
		}
		if !sameEvents(one, want) {
			t.Fatalf("keep %d: LoadEvents\n%v\nwant\n%v", keep, one, want)
		}
	}
	if evs, err := h.db.LoadEvents(ctx, [16]byte{0xee}, 200); err != nil || len(evs) != 0 {
		t.Fatalf("history of an unknown agent: %v %v", evs, err)
	}
}

// testEventsExact: a message is stored byte for byte, whatever an agent
// put in it (NUL, invalid UTF-8, 64 KiB), and a sequence number written
// again replaces its event.
func testEventsExact(t *testing.T, h *handle) {
	now := time.Unix(1700000000, 0).UTC()
	a := agent(1, now)
	big := make([]byte, 64<<10)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	odd := []store.Event{
		{Seq: 1, Time: now, Type: "description", Message: "nul \x00 here"},
		{Seq: 2, Time: now, Type: "description", Message: "invalid \xff\xfe utf-8"},
		{Seq: 3, Time: now, Type: "description", Message: string(big)},
		{Seq: 4, Time: now, Type: "t", Message: "replaced"},
	}
	must(t, h.db.Write(ctx, store.Batch{Agents: []store.Agent{a}, Events: map[[16]byte][]store.Event{a.UID: odd}}))
	again := store.Event{Seq: 4, Time: now.Add(time.Second), Type: "t2", Message: "replacement"}
	// Within one batch too: the last given wins.
	must(t, h.db.Write(ctx, store.Batch{Events: map[[16]byte][]store.Event{a.UID: {{Seq: 4, Type: "first"}, again}}}))
	odd[3] = again
	_, got := loadAll(t, h.restart(), 10)
	if !sameEvents(got, map[[16]byte][]store.Event{a.UID: odd}) {
		t.Fatalf("events read back differ:\n%+v", got[a.UID])
	}
}

func sameEvents(got, want map[[16]byte][]store.Event) bool {
	if len(got) != len(want) {
		return false
	}
	for uid, w := range want {
		g := got[uid]
		if len(g) != len(w) {
			return false
		}
		for i := range w {
			if g[i].Seq != w[i].Seq || !g[i].Time.Equal(w[i].Time) || g[i].Type != w[i].Type || g[i].Message != w[i].Message {
				return false
			}
		}
	}
	return true
}
