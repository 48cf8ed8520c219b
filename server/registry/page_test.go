package registry

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/store"
)

// Pages walk every agent in UID order, including agents registered between
// pages (merged from the unsorted tail), and say whether more follow.
func TestPagesFollowUIDOrder(t *testing.T) {
	r, err := Load(context.Background(), &recordingStore{}, nil, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cred := store.Credential{Kind: "token", ID: "t1"}
	collector := uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig)
	var all, collectors []uuid.UUID
	register := func(n int) {
		for i := range n {
			uid := uuid.New()
			caps := uint64(1)
			if i%3 == 0 {
				caps = collector
				collectors = append(collectors, uid)
			}
			if _, err := r.Report(uid, cred, &protobufs.AgentToServer{Capabilities: caps,
				AgentDescription: &protobufs.AgentDescription{}}, false, true); err != nil {
				t.Fatal(err)
			}
			r.AddEvent(uid, "note", "x")
			all = append(all, uid)
		}
	}
	register(40)

	var got []uuid.UUID
	q := PageQuery{Limit: 7, WithEvents: true}
	for pages := 0; ; pages++ {
		if pages == 2 {
			register(30) // between pages: those above the cursor still show
		}
		page, more := r.Page(q)
		for _, a := range page {
			if len(a.Events) != 2 {
				t.Fatalf("agent %s has %d events, want 2", a.UID, len(a.Events))
			}
			got = append(got, a.UID)
		}
		if !more {
			break
		}
		if len(page) != 7 {
			t.Fatalf("page of %d with more to follow", len(page))
		}
		q.After, q.HasAfter = page[len(page)-1].UID, true
	}
	if !slices.IsSortedFunc(got, compareUID) {
		t.Fatal("pages are not in UID order")
	}
	slices.SortFunc(all, compareUID)
	// Agents registered mid-walk below the cursor are not seen; every other one is, once.
	missed := 0
	for _, u := range all {
		if _, found := slices.BinarySearchFunc(got, u, compareUID); !found {
			missed++
		}
	}
	if len(got)+missed != 70 || missed > 30 {
		t.Fatalf("walked %d agents, missed %d of 70", len(got), missed)
	}

	// A full listing is sorted and complete; a kind filter keeps only that kind.
	if list := r.List("", false); len(list) != 70 || !slices.IsSortedFunc(list, func(a, b Agent) int { return compareUID(a.UID, b.UID) }) {
		t.Fatalf("List: %d agents (want 70), sorted %v", len(list), slices.IsSortedFunc(list, func(a, b Agent) int { return compareUID(a.UID, b.UID) }))
	}
	slices.SortFunc(collectors, compareUID)
	page, more := r.Page(PageQuery{Kind: KindCollector, Limit: len(collectors)})
	if more || len(page) != len(collectors) {
		t.Fatalf("collectors: %d, more %v; want %d, false", len(page), more, len(collectors))
	}
	for i, a := range page {
		if a.UID != collectors[i] || a.Kind != KindCollector {
			t.Fatalf("collector page[%d] = %s %s", i, a.UID, a.Kind)
		}
	}
	page, more = r.Page(PageQuery{Kind: KindCollector, Limit: len(collectors) - 1})
	if !more || len(page) != len(collectors)-1 {
		t.Fatalf("collectors but one: %d, more %v", len(page), more)
	}
}

// A snapshot's events stay as they were while the agent gains more.
func TestSnapshotEventsAreStable(t *testing.T) {
	r, err := Load(context.Background(), &recordingStore{}, nil, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	uid := uuid.New()
	if _, err := r.Report(uid, store.Credential{Kind: "token", ID: "t"}, &protobufs.AgentToServer{}, false, true); err != nil {
		t.Fatal(err)
	}
	for i := range MaxEvents + 5 {
		snap, _ := r.Get(uid)
		before := slices.Clone(snap.Events)
		r.AddEvent(uid, "note", string(rune('a'+i%26)))
		if !slices.Equal(snap.Events, before) {
			t.Fatalf("event %d changed an earlier snapshot", i)
		}
	}
}
