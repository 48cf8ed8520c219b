package cluster

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// followSource holds the leader's state and decisions as the store would.
type followSource struct {
	Source // only the reads below are used
	mu     sync.Mutex
	leader []byte
	offers map[[16]byte][]byte
	assign map[[16]byte][]byte
}

func (s *followSource) GetState(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if key != leaderKey || s.leader == nil {
		return nil, store.ErrNotFound
	}
	return s.leader, nil
}

func (s *followSource) LoadOffers(context.Context) (map[[16]byte][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.offers), nil
}

func (s *followSource) LoadConfigs(context.Context) (map[[16]byte][]byte, map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.assign), nil, nil
}

func (s *followSource) lead(t *testing.T, instance string, since time.Time) {
	b, err := json.Marshal(LeaderState{Instance: instance, Since: since})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.leader = b
	s.mu.Unlock()
}

// mirrored records what a follower is given of the leader's decisions.
type mirrored struct {
	offers, assign []map[[16]byte][]byte
}

func (m *mirrored) Mirror(recs map[[16]byte][]byte) { m.offers = append(m.offers, recs) }
func (m *mirrored) Merge(recs map[[16]byte][]byte) []string {
	m.assign = append(m.assign, recs)
	return nil
}
func (m *mirrored) AddBodies(map[string][]byte) {}

// A leader that dies between writing decisions and announcing them leaves
// the followers without what it wrote last: a follower reads every
// decision again when the state it reads names another leader (or the
// same instance leading again), and only then.
func TestFollowersReadTheDecisionsAgainWhenTheLeaderChanges(t *testing.T) {
	col := [16]byte{1}
	t0 := time.Unix(1700000000, 0).UTC()
	src := &followSource{offers: map[[16]byte][]byte{col: []byte(`{"state":"installing"}`)},
		assign: map[[16]byte][]byte{col: []byte("assigned")}}
	src.lead(t, "a", t0)
	m := &mirrored{}
	s := NewSync(src, nil, nil, nil, SyncOptions{Log: slog.New(slog.DiscardHandler), Offers: m, Configs: m})
	s.mu.Lock()
	s.leaderSeen = (&LeaderState{Instance: "a", Since: t0}).key() // as Start reads it
	s.mu.Unlock()

	s.Handle(Change{Kind: KindState})
	if len(m.offers)+len(m.assign) != 0 {
		t.Fatalf("read the decisions again while the same instance leads: %d offer and %d assignment reads", len(m.offers), len(m.assign))
	}
	// "a" wrote its last decision and died before announcing it; "b" leads.
	src.mu.Lock()
	src.offers[col] = []byte(`{"state":"up_to_date"}`)
	src.mu.Unlock()
	src.lead(t, "b", t0.Add(4*time.Second))
	s.Handle(Change{Kind: KindState})
	if len(m.offers) != 1 || string(m.offers[0][col]) != `{"state":"up_to_date"}` || len(m.assign) != 1 || string(m.assign[0][col]) != "assigned" {
		t.Fatalf("after the leader changed: offers read %v, assignments read %v", m.offers, m.assign)
	}
	s.Handle(Change{Kind: KindState})
	src.lead(t, "b", t0.Add(4*time.Second))
	s.Handle(Change{Kind: KindState})
	if len(m.offers) != 1 || len(m.assign) != 1 {
		t.Fatalf("read again while the leader did not change: %d and %d reads", len(m.offers), len(m.assign))
	}
	src.lead(t, "a", t0.Add(time.Minute)) // the first instance leads again
	s.Handle(Change{Kind: KindState})
	if len(m.offers) != 2 || len(m.assign) != 2 {
		t.Fatalf("not read again when an instance led again: %d and %d reads", len(m.offers), len(m.assign))
	}
}

// A leader publishes itself when it takes over (a new Since) and again for
// a new estate revision, keeping Since: followers read every decision
// again only in the first case.
func TestNextLeaderState(t *testing.T) {
	t0, now := time.Unix(1700000000, 0).UTC(), time.Unix(1700000100, 0).UTC()
	for _, tc := range []struct {
		name string
		prev *LeaderState
		want *LeaderState
	}{
		{"none known", nil, &LeaderState{Instance: "a", EstateRevision: "r2", Since: now}},
		{"another led", &LeaderState{Instance: "b", EstateRevision: "r2", Since: t0}, &LeaderState{Instance: "a", EstateRevision: "r2", Since: now}},
		{"a new revision", &LeaderState{Instance: "a", EstateRevision: "r1", Since: t0}, &LeaderState{Instance: "a", EstateRevision: "r2", Since: t0}},
		{"nothing changed", &LeaderState{Instance: "a", EstateRevision: "r2", Since: t0}, nil},
	} {
		got := nextLeaderState(tc.prev, "a", "r2", now)
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
