package providers

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/vars"
)

// scriptedContext publishes what the test sends with send, which returns
// once the manager has taken the data.
type scriptedContext struct {
	name string
	in   chan map[string]any
	ack  chan struct{}
}

func newScripted(name string) *scriptedContext {
	return &scriptedContext{name: name, in: make(chan map[string]any), ack: make(chan struct{})}
}

func (s *scriptedContext) send(d map[string]any) {
	s.in <- d
	<-s.ack
}

func (s *scriptedContext) Name() string { return s.name }

func (s *scriptedContext) Run(ctx context.Context, set func(map[string]any)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case d := <-s.in:
			set(d)
			s.ack <- struct{}{}
		}
	}
}

// TestManagerDebounce drives the debounce timer by hand: a burst of updates
// taken before the timer fires is published as one complete snapshot.
func TestManagerDebounce(t *testing.T) {
	tick := make(chan time.Time)
	initial := make(chan time.Time)
	calls := 0
	opts := Options{after: func(time.Duration) <-chan time.Time {
		calls++
		if calls == 1 {
			return initial
		}
		return tick
	}}
	m := NewManager(nil, opts)
	a := newScripted("a")
	m.AddContext(a)
	m.AddContext(&staticContext{name: "b", data: func() map[string]any { return map[string]any{"k": "v"} }})
	m.AddDynamic(&localDynamic{items: []LocalDynamicItem{{Vars: map[string]any{"x": int64(1)}}}}, 0)

	snaps := make(chan Snapshot, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx, func(s Snapshot) { snaps <- s })

	// The first snapshot waits for every provider.
	a.send(map[string]any{"n": int64(0)})
	first := <-snaps
	if first.Context["a"].(map[string]any)["n"] != int64(0) || first.Context["b"] == nil || len(first.Mappings) != 1 {
		t.Fatalf("first snapshot incomplete: %+v", first)
	}
	if first.Mappings[0].Provider != "local_dynamic" || first.Mappings[0].ID != "0" {
		t.Fatalf("mapping not stamped with its provider: %+v", first.Mappings[0])
	}
	for i := 1; i <= 50; i++ {
		a.send(map[string]any{"n": int64(i)})
	}
	select {
	case s := <-snaps:
		t.Fatalf("published before the debounce fired: %+v", s)
	default:
	}
	tick <- time.Now()
	s := <-snaps
	if got := s.Context["a"].(map[string]any)["n"]; got != int64(50) {
		t.Fatalf("debounced snapshot has n=%v, want the last update 50", got)
	}
	if s.Context["b"] == nil || len(s.Mappings) != 1 {
		t.Fatalf("debounced snapshot is not complete: %+v", s)
	}
	select {
	case s := <-snaps:
		t.Fatalf("burst published more than once: %+v", s)
	default:
	}
}

// TestManagerInitialWait publishes what it has when a provider never
// reports.
func TestManagerInitialWait(t *testing.T) {
	initial := make(chan time.Time)
	m := NewManager(nil, Options{after: func(time.Duration) <-chan time.Time { return initial }})
	m.AddContext(newScripted("silent"))
	local := newScripted("local")
	m.AddContext(local)
	snaps := make(chan Snapshot, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx, func(s Snapshot) { snaps <- s })
	local.send(map[string]any{"a": "b"})
	initial <- time.Now()
	s := <-snaps
	if _, ok := s.Context["silent"]; ok || s.Context["local"] == nil {
		t.Fatalf("snapshot %+v", s)
	}
}

// flaky fails (or panics) a few times before it works.
type flaky struct {
	runs  atomic.Int32
	fails int32
}

func (f *flaky) Name() string { return "flaky" }

func (f *flaky) Run(ctx context.Context, set func([]vars.Mapping)) error {
	n := f.runs.Add(1)
	switch {
	case n == 1:
		panic("boom")
	case n <= f.fails:
		return errors.New("engine unreachable")
	case n == f.fails+1:
		return nil // a premature nil is a failure too
	}
	set([]vars.Mapping{{ID: "ok"}})
	<-ctx.Done()
	return nil
}

func TestManagerRestartsWithBackoff(t *testing.T) {
	f := &flaky{fails: 3}
	m := NewManager(slog.New(slog.DiscardHandler), Options{BackoffInitial: time.Millisecond, BackoffMax: 4 * time.Millisecond})
	m.AddDynamic(f, 7)
	snaps := make(chan Snapshot, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- m.Run(ctx, func(s Snapshot) { snaps <- s }) }()
	s := <-snaps
	if len(s.Mappings) != 1 || s.Mappings[0].Provider != "flaky" || s.Mappings[0].Priority != 7 {
		t.Fatalf("snapshot %+v", s)
	}
	if got := f.runs.Load(); got != 5 {
		t.Fatalf("provider ran %d times, want 5 (panic, 2 errors, premature nil, success)", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
}

func TestManagerRejectsDuplicateNames(t *testing.T) {
	m := NewManager(nil, Options{})
	m.AddContext(newLocalProvider(nil))
	m.AddContext(newLocalProvider(nil))
	if err := m.Run(context.Background(), func(Snapshot) {}); err == nil {
		t.Fatal("two providers named local accepted")
	}
}

func TestManagerMappingOrder(t *testing.T) {
	m := NewManager(nil, Options{})
	m.AddDynamic(&named{name: "zeta", ids: []string{"b", "a"}}, 1)
	m.AddDynamic(&named{name: "alpha", ids: []string{"2", "1"}}, 1)
	m.AddDynamic(&named{name: "omega", ids: []string{"x"}}, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []string
	_ = m.Run(ctx, func(s Snapshot) {
		for _, mp := range s.Mappings {
			got = append(got, mp.Provider+"-"+mp.ID)
		}
		cancel()
	})
	want := "omega-x alpha-2 alpha-1 zeta-b zeta-a"
	if j := join(got); j != want {
		t.Fatalf("order %q, want %q (priority, then name, then the provider's own order)", j, want)
	}
}

type named struct {
	name string
	ids  []string
}

func (n *named) Name() string { return n.name }
func (n *named) Run(ctx context.Context, set func([]vars.Mapping)) error {
	var ms []vars.Mapping
	for _, id := range n.ids {
		ms = append(ms, vars.Mapping{ID: id})
	}
	set(ms)
	<-ctx.Done()
	return nil
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}
