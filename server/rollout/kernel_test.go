package rollout

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/store"
)

func budget(mf int) estate.Fleet {
	return estate.Fleet{Name: "edge", Rollout: &estate.Rollout{Waves: []string{"canary"}, MaxFailures: mf}}
}

func TestStateBudgetPauseResume(t *testing.T) {
	tests := []struct {
		name       string
		def        estate.Fleet
		failures   int
		wantPaused bool
		wantBy     string
	}{
		{"within the budget", budget(2), 2, false, ""},
		{"over the budget", budget(2), 3, true, ByFailures},
		{"no budget without a rollout section", estate.Fleet{Name: "edge"}, 10, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s State
			paused := 0
			for range tt.failures {
				if s.Fail(tt.def) {
					paused++
				}
			}
			if s.Paused != tt.wantPaused || s.PausedBy() != tt.wantBy || s.Failures != tt.failures {
				t.Fatalf("%+v (by %q), want paused %v by %q", s, s.PausedBy(), tt.wantPaused, tt.wantBy)
			}
			if tt.wantPaused != (paused == 1) {
				t.Fatalf("Fail reported pausing %d times", paused)
			}
			s.Resume()
			if s.Paused || s.Spent() != 0 {
				t.Fatalf("after Resume %+v: want running with nothing spent", s)
			}
		})
	}
}

func TestStateOperatorPause(t *testing.T) {
	var s State
	if !s.Pause() || s.Pause() {
		t.Fatal("Pause reports a change only the first time")
	}
	if s.PausedBy() != ByOperator {
		t.Fatalf("paused by %q", s.PausedBy())
	}
	if r := s.Restart(); !r.Paused || !r.Manual || r.Failures != 0 {
		t.Fatalf("a new rollout of a fleet an operator paused is %+v: want it held", r)
	}
	s.Fail(budget(0)) // a failure does not make an operator's pause one of failures
	if s.PausedBy() != ByOperator {
		t.Fatalf("paused by %q after a failure", s.PausedBy())
	}
	if r := (State{Paused: true, Failures: 5}).Restart(); r != (State{}) {
		t.Fatalf("a new rollout after a pause for failures is %+v: want it running", r)
	}
}

func TestGatesOpened(t *testing.T) {
	done := func(st string) bool { return st == "done" }
	w := New(3, done)
	a, b, c := uuid.New(), uuid.New(), uuid.New()
	w.Set(a, 0, "busy")
	w.Set(b, 1, "busy")
	w.Set(c, 2, "busy")
	g := Gates{}
	g.Note(w)
	g.Note(nil)
	w.Set(a, 0, "done")
	g.Note(w) // noted already: where it stood first counts
	got := slices.Collect(g.Opened())
	if len(got) != 1 || got[0] != b {
		t.Fatalf("opened %v, want wave 1's member %v", got, b)
	}
	if len(w.MemberSet()) != 3 {
		t.Fatalf("member set %v", w.MemberSet())
	}
}

func TestSummarizeAndRows(t *testing.T) {
	w := New(2, func(st string) bool { return st == "done" })
	w.Set(uuid.New(), 0, "done")
	w.Set(uuid.New(), 1, "busy")
	tests := []struct {
		name     string
		def      estate.Fleet
		s        State
		complete bool
		want     string
		wantBy   string
		wantMax  bool
		names    []string
	}{
		{"running", budget(1), State{Failures: 1}, false, Running, "", true, []string{"canary", "(no wave)"}},
		{"complete", budget(1), State{}, true, Complete, "", true, []string{"canary", "(no wave)"}},
		{"paused by failures", budget(1), State{Paused: true}, true, Paused, ByFailures, true, []string{"canary", "(no wave)"}},
		{"without waves", estate.Fleet{}, State{Paused: true, Manual: true}, false, Paused, ByOperator, false, []string{"all", "all"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.def, tt.s, tt.complete)
			if s.State != tt.want || s.PausedBy != tt.wantBy || (s.MaxFailures != nil) != tt.wantMax || s.Failures != tt.s.Failures {
				t.Fatalf("%+v, want %s by %q", s, tt.want, tt.wantBy)
			}
			rows := Rows(tt.def, w)
			var names []string
			for _, r := range rows {
				names = append(names, r.Wave)
			}
			if !slices.Equal(names, tt.names) || rows[0].Total != 1 || !rows[1].Open || rows[1].States["busy"] != 1 {
				t.Fatalf("rows %+v", rows)
			}
			rows[1].States["busy"] = 7 // a copy
			if w.Counts(1)["busy"] != 1 {
				t.Fatal("Rows handed out the counts of the Waves")
			}
		})
	}
}

func TestRole(t *testing.T) {
	var mu sync.Mutex
	for _, shared := range []bool{false, true} {
		r := NewRole(shared)
		if r.Leads() == shared {
			t.Fatalf("shared %v: leads %v", shared, r.Leads())
		}
		dropped := 0
		r.StepDown(&mu, func() { dropped++ })
		r.StepDown(&mu, func() { dropped++ })
		if want := map[bool]int{false: 1, true: 0}[shared]; dropped != want || r.Leads() {
			t.Fatalf("shared %v: dropped %d times, want %d", shared, dropped, want)
		}
		r.Lead()
		if !r.Leads() {
			t.Fatal("Lead did not make it lead")
		}
	}
}

// memStates is a StateStore in memory; put fails with err when set.
type memStates struct {
	m   map[string][]byte
	err error
}

func (s *memStates) PutState(_ context.Context, k string, v []byte) error {
	if s.err != nil {
		return s.err
	}
	s.m[k] = v
	return nil
}
func (s *memStates) DeleteState(_ context.Context, k string) error { delete(s.m, k); return nil }
func (s *memStates) ListState(_ context.Context, prefix string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for k, v := range s.m {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			out[k] = v
		}
	}
	return out, nil
}

func TestStatesKeepStatesByFleet(t *testing.T) {
	type thing struct {
		Target string `json:"targetVersion"`
		State
	}
	mem := &memStates{m: map[string][]byte{"other/edge": []byte(`{}`), "r/bad": []byte(`{`)}}
	s := NewStates(mem, "r/", "rollout state", slog.New(slog.DiscardHandler))
	s.Put("edge", thing{Target: "1.0", State: State{Paused: true, Failures: 2}})
	if got := string(mem.m["r/edge"]); got != `{"targetVersion":"1.0","paused":true,"failures":2,"baseline":0}` {
		t.Fatalf("stored %s", got)
	}
	raw, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := Decode[thing](raw)
	if len(got) != 1 || got["edge"].Target != "1.0" || !got["edge"].Paused {
		t.Fatalf("decoded %+v", got)
	}
	s.Delete("edge")
	for _, err := range []error{store.ErrNotLeader, errors.New("disk full")} {
		mem.err = err
		s.Put("core", thing{}) // logged, not returned
	}
	if raw, _ := s.List(context.Background()); len(raw) != 1 || raw["bad"] == nil {
		t.Fatalf("left %v", raw)
	}
}

func TestQueueCoalescesAndCloses(t *testing.T) {
	q := NewQueue[int]()
	a, b := uuid.New(), uuid.New()
	q.Push(a, 1)
	q.Push(b, 2)
	q.Push(a, 3) // a stays first, with its latest value
	for _, want := range []struct {
		uid uuid.UUID
		v   int
	}{{a, 3}, {b, 2}} {
		uid, v, ok := q.Pop()
		if !ok || uid != want.uid || v != want.v {
			t.Fatalf("Pop = %v %d %v, want %v %d", uid, v, ok, want.uid, want.v)
		}
	}
	var mu sync.Mutex
	got := map[uuid.UUID]int{}
	q.Serve(2, func(uid uuid.UUID, v int) { mu.Lock(); got[uid] = v; mu.Unlock() })
	q.Push(a, 4)
	testkit.WaitFor(t, "a served", func() bool { mu.Lock(); defer mu.Unlock(); return got[a] == 4 })
	q.Close()
	q.Push(b, 5)
	if _, _, ok := q.Pop(); ok {
		t.Fatal("Pop after Close returned an item")
	}
}
