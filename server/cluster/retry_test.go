package cluster

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/server/store"
)

func TestRetriesOweAResyncUntilOneSucceeds(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := newRetries(time.Second)
	failed := errors.New("context deadline exceeded")
	type step struct {
		c        Change
		err      error
		at       time.Duration // since t0
		owed     string
		wait     time.Duration
		dueAfter []string // what due returns at the same time, after record
	}
	for i, s := range []step{
		{c: Change{Kind: KindReports, IDs: []string{"a"}}, err: nil},
		{c: Change{Kind: KindReports, Resync: true}, err: failed, owed: KindReports, wait: time.Second},
		{c: Change{Kind: KindReports, IDs: []string{"b"}}, err: nil, at: 500 * time.Millisecond},            // not due yet; still owed
		{c: Change{Kind: KindTokens, IDs: nil}, err: nil, at: time.Second, dueAfter: []string{KindReports}}, // due now
		{c: Change{Kind: KindReports, Resync: true}, err: failed, at: time.Second, owed: KindReports, wait: 2 * time.Second},
		{c: Change{Kind: KindReports, Resync: true}, err: failed, at: 3 * time.Second, owed: KindReports, wait: 4 * time.Second},
		{c: Change{Kind: KindAgents, Resync: true}, err: &Owed{Kind: KindReports, Err: failed}, at: 3 * time.Second, owed: KindReports, wait: 8 * time.Second},
		{c: Change{Kind: KindRequest, IDs: []string{"x"}}, err: failed, at: 3 * time.Second},                                // not read again
		{c: Change{Kind: KindReports, IDs: []string{"c"}}, err: nil, at: 11 * time.Second, dueAfter: []string{KindReports}}, // due
		{c: Change{Kind: KindReports, Resync: true}, err: nil, at: 11 * time.Second},                                        // done
		{c: Change{Kind: KindReports, Resync: true}, err: failed, at: time.Hour, owed: KindReports, wait: time.Second},      // starts over
	} {
		now := t0.Add(s.at)
		owed, wait := r.record(s.c, s.err, now)
		if owed != s.owed || wait != s.wait {
			t.Fatalf("step %d: record(%+v, %v) = %q, %v; want %q, %v", i, s.c, s.err, owed, wait, s.owed, s.wait)
		}
		if got := r.due(now); !slices.Equal(got, s.dueAfter) {
			t.Fatalf("step %d: due = %v, want %v", i, got, s.dueAfter)
		}
	}
	for range 10 {
		r.record(Change{Kind: KindReports, Resync: true}, failed, t0)
	}
	if _, wait := r.record(Change{Kind: KindReports, Resync: true}, failed, t0); wait != 30*time.Second {
		t.Errorf("the wait after many failures is %v, want at most 30 s", wait)
	}
}

// A change that fails to apply is handed on again as a resync of its kind,
// after a wait, until one succeeds; then no more.
func TestNotifierReadsAgainWhatFailed(t *testing.T) {
	dsn := testenv.Postgres(t)
	a, _ := start(t, dsn, NotifierOptions{})
	b := NewNotifier(open(t, dsn), slog.New(slog.DiscardHandler), NotifierOptions{Retry: 20 * time.Millisecond})
	var mu sync.Mutex
	var handled []Change
	fails := 3
	b.Start()
	listening(t, b)
	b.Handle(func(c Change) error {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, c)
		if c.Kind == KindReports && fails > 0 {
			fails--
			return errors.New("the database took too long")
		}
		return nil
	})
	t.Cleanup(b.Close)
	a.Publish(KindReports, "r1")
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(handled)
		mu.Unlock()
		if n >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("handled %d changes, want the failed one and three resyncs", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Two changes of tokens, one publishing round apart (≥ 100 ms, five
	// first waits): a resync still owed would come among them.
	tokens := func(n int) {
		t.Helper()
		a.Publish(KindTokens)
		deadline := time.Now().Add(20 * time.Second)
		for {
			mu.Lock()
			got := 0
			for _, c := range handled {
				if c.Kind == KindTokens {
					got++
				}
			}
			mu.Unlock()
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("change %d of tokens never came", n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	tokens(1)
	tokens(2)
	mu.Lock()
	defer mu.Unlock()
	want := []Change{{Kind: KindReports, IDs: []string{"r1"}}, {Kind: KindReports, Resync: true}, {Kind: KindReports, Resync: true}, {Kind: KindReports, Resync: true}, {Kind: KindTokens}, {Kind: KindTokens}}
	if len(handled) != len(want) {
		t.Fatalf("handled %+v, want %+v", handled, want)
	}
	for i := range want {
		if handled[i].Kind != want[i].Kind || handled[i].Resync != want[i].Resync || !slices.Equal(handled[i].IDs, want[i].IDs) {
			t.Fatalf("handled %+v, want %+v", handled, want)
		}
	}
	st := b.Stats()
	if r := st.Kinds[KindReports]; r.Applied != 4 || r.Resyncs != 3 || r.Failed != 3 || st.Kinds[KindTokens].Applied != 2 || st.Queued != 0 {
		t.Fatalf("stats %+v, want reports applied 4 (3 resyncs, 3 failed), tokens 2, none queued", st)
	}
}

// failingReports is a store whose reading of reports fails a number of
// times (a busy database past the handler's budget).
type failingReports struct {
	leadSource
	mu    sync.Mutex
	fails int
}

func (s *failingReports) LoadReports(ctx context.Context, uids [][16]byte) ([]store.Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fails > 0 {
		s.fails--
		return nil, context.DeadlineExceeded
	}
	return s.leadSource.LoadReports(ctx, uids)
}

// A leader whose reload of every agent succeeds but whose reload of
// reports after it fails owes the reports (not the agents) a resync; the
// resync gives the deciders the reports.
func TestFailedReportsReloadIsOwed(t *testing.T) {
	here, db := openRegistry(t)
	upd := uuid.New()
	here.SetReport(upd, "packages", time.Now(), []byte("installed"))
	if err := here.Flush(); err != nil {
		t.Fatal(err)
	}
	d := &decider{}
	lead := &Leader{}
	lead.leading.Store(true)
	src := &failingReports{leadSource: leadSource{db: db}, fails: 1}
	s := NewSync(src, here, nil, nil, SyncOptions{Lease: time.Minute, Leader: lead, Deciders: []Decider{d}})

	err := s.Handle(Change{Kind: KindAgents, Resync: true})
	var owed *Owed
	if !errors.As(err, &owed) || owed.Kind != KindReports || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Handle of an agents' reload whose reports' reload failed = %v, want an *Owed of %q keeping the cause", err, KindReports)
	}
	if len(d.reports) != 0 {
		t.Fatalf("the deciders were given %d reports of a failed reload", len(d.reports))
	}
	if err := s.Handle(Change{Kind: KindReports, Resync: true}); err != nil {
		t.Fatal(err)
	}
	if len(d.reports) != 1 || d.reports[0].UID != upd {
		t.Fatalf("after the resync the deciders were given %+v, want the report", d.reports)
	}
}
