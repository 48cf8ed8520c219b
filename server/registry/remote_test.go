package registry

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/store"
)

// Merge adds and replaces agents another instance wrote, except one
// connected here; nothing merged is written back; observers hear of each
// merged agent; the lease makes an agent online until it ends.
func TestMergeAndLeases(t *testing.T) {
	now := time.Unix(1700000000, 0).UTC()
	var clock sync.Mutex
	cur := now
	st := &recordingStore{}
	r, err := Load(context.Background(), st, nil, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour, Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return cur }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var told []uuid.UUID
	var toldMu sync.Mutex
	r.Observe(func(u uuid.UUID) { toldMu.Lock(); told = append(told, u); toldMu.Unlock() })

	here := uuid.New()
	cred := store.Credential{Kind: "token", ID: "t1"}
	if _, err := r.Report(here, cred, &protobufs.AgentToServer{AgentDescription: &protobufs.AgentDescription{}, Capabilities: 1}, false, true); err != nil {
		t.Fatal(err)
	}
	r.Flush()
	written, _ := st.rows()

	elsewhere := uuid.New()
	rec := func(uid uuid.UUID, kind string) store.Agent {
		return store.Agent{UID: uid, Credential: cred, Kind: kind, Capabilities: 7, FirstSeen: now, LastSeen: now}
	}
	lease := func(t time.Time) time.Time { return t.Add(3 * time.Second) }
	n := r.Merge([]store.Agent{rec(elsewhere, "collector"), rec(here, "updater")},
		map[[16]byte][]store.Event{elsewhere: {{Seq: 4, Time: now, Type: EventRegistered, Message: "registered"}}}, lease)
	if n != 1 {
		t.Fatalf("merged %d agents, want 1 (the one connected here keeps its record)", n)
	}
	if a, _ := r.Get(here); a.Kind == "updater" {
		t.Fatal("an agent connected here was replaced by another instance's record")
	}
	a, ok := r.Get(elsewhere)
	if !ok || a.Kind != "collector" || !a.Online || len(a.Events) != 1 {
		t.Fatalf("merged agent = %+v", a)
	}
	toldMu.Lock()
	if !slices.Contains(told, elsewhere) {
		t.Fatal("observers were not told of the merged agent")
	}
	toldMu.Unlock()
	r.Flush()
	if w, _ := st.rows(); w != written {
		t.Fatalf("merging wrote %d rows back", w-written)
	}
	// An event added here continues the merged history's numbering.
	r.AddEvent(elsewhere, "t", "next")
	if a, _ := r.Get(elsewhere); a.Events[len(a.Events)-1].Seq != 5 {
		t.Fatalf("next event seq %d, want 5", a.Events[len(a.Events)-1].Seq)
	}

	// The lease: renewed while the database shows it seen, gone when not.
	clock.Lock()
	cur = now.Add(2 * time.Second)
	clock.Unlock()
	r.SeenElsewhere(map[[16]byte]time.Time{elsewhere: now.Add(2 * time.Second)}, nil, lease)
	clock.Lock()
	cur = now.Add(4 * time.Second)
	clock.Unlock()
	if a, _ := r.Peek(elsewhere); !a.Online {
		t.Fatal("offline although its lease was renewed")
	}
	clock.Lock()
	cur = now.Add(10 * time.Second)
	clock.Unlock()
	if a, _ := r.Peek(elsewhere); a.Online {
		t.Fatal("online after its lease ended")
	}
	r.SeenElsewhere(map[[16]byte]time.Time{}, nil, lease)
	if a, _ := r.Peek(here); !a.Online {
		t.Fatal("an agent connected here went offline by a lease sweep")
	}
}
