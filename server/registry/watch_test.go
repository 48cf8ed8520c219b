package registry

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/store"
)

// Watchers hear what observers hear plus events and feature data; observers
// (which re-evaluate offers) are not woken by either.
func TestWatchersHearEventsAndExtra(t *testing.T) {
	r, err := Load(context.Background(), &recordingStore{}, nil, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var mu sync.Mutex
	var observed, watched []string
	r.Observe(func(uuid.UUID) { mu.Lock(); observed = append(observed, "o"); mu.Unlock() })
	r.Watch(func(uuid.UUID) { mu.Lock(); watched = append(watched, "w"); mu.Unlock() })
	take := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		o, w := len(observed), len(watched)
		observed, watched = nil, nil
		return o, w
	}
	uid, other := uuid.New(), uuid.New()
	cred := store.Credential{Kind: "token", ID: "t1"}
	steps := []struct {
		name         string
		do           func()
		observe, see int
	}{
		{"registration", func() {
			r.Report(uid, cred, &protobufs.AgentToServer{AgentDescription: &protobufs.AgentDescription{}}, false, true)
		}, 1, 1},
		{"heartbeat", func() { r.Report(uid, cred, &protobufs.AgentToServer{SequenceNum: 1}, false, false) }, 0, 0},
		{"event", func() { r.AddEvent(uid, "note", "hello") }, 0, 1},
		{"feature data", func() { r.SetExtra(uid, []byte(`{}`)) }, 0, 1},
		{"identity conflict", func() {
			r.Report(uid, store.Credential{Kind: "token", ID: "t2"}, &protobufs.AgentToServer{}, false, true)
		}, 0, 0},
		{"identity conflict recorded", func() { r.RecordConflict(uid, store.Credential{Kind: "token", ID: "t2"}, "192.0.2.1:1") }, 0, 1},
		{"disconnect", func() { r.Disconnected(uid) }, 1, 1},
		{"unknown agent", func() { r.AddEvent(other, "note", "x"); r.SetExtra(other, nil) }, 0, 0},
	}
	for _, s := range steps {
		s.do()
		if o, w := take(); o != s.observe || w != s.see {
			t.Errorf("%s: observers told %d times, watchers %d; want %d and %d", s.name, o, w, s.observe, s.see)
		}
	}
}

func TestLabelSourcesFollowPrecedence(t *testing.T) {
	toks := fakeTokens{"t1": "north"} // token labels: from=token
	r, err := Load(context.Background(), &recordingStore{}, toks, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	uid := uuid.New()
	if _, err := r.Report(uid, store.Credential{Kind: "token", ID: "t1"}, &protobufs.AgentToServer{}, false, true); err != nil {
		t.Fatal(err)
	}
	r.SetInventory(Inventory{
		ByToken: map[string]map[string]string{"north": {"region": "eu", "wave": "2"}},
		ByUID:   map[uuid.UUID]map[string]string{uid: {"wave": "1"}},
	})
	got, ok := r.LabelSources(uid)
	want := map[string]string{"from": LabelFromToken, "region": LabelFromInventoryToken, "wave": LabelFromInventoryUID}
	if !ok || !maps.Equal(got, want) {
		t.Fatalf("LabelSources = %v, %v; want %v", got, ok, want)
	}
	if a, _ := r.Peek(uid); a.Labels["wave"] != "1" || a.Labels["region"] != "eu" || a.Labels["from"] != "token" {
		t.Fatalf("labels %v disagree with the sources", a.Labels)
	}
	if _, ok := r.LabelSources(uuid.New()); ok {
		t.Fatal("LabelSources of an unknown agent")
	}
}
