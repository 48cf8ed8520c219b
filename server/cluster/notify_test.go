package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/myriarch/myriarch/internal/testenv"
)

func TestMain(m *testing.M) {
	code := testenv.RunWithPostgres(m)
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck")); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left running:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func pool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// recorder collects the changes a notifier hands on.
type recorder struct {
	mu      sync.Mutex
	changes []Change
}

func (r *recorder) handle(c Change) error {
	r.mu.Lock()
	r.changes = append(r.changes, c)
	r.mu.Unlock()
	return nil
}

// waitFor polls until cond holds over what was received.
func (r *recorder) waitFor(t *testing.T, what string, cond func([]Change) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r.mu.Lock()
		ok := cond(r.changes)
		got := slices.Clone(r.changes)
		r.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never received; got %+v", what, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ids(cs []Change, kind string) map[string]bool {
	out := map[string]bool{}
	for _, c := range cs {
		if c.Kind == kind {
			for _, id := range c.IDs {
				out[id] = true
			}
		}
	}
	return out
}

func resynced(cs []Change, kind string) bool {
	return slices.ContainsFunc(cs, func(c Change) bool { return c.Kind == kind && c.Resync })
}

func start(t *testing.T, dsn string, opts NotifierOptions) (*Notifier, *recorder) {
	n := NewNotifier(pool(t, dsn), slog.New(slog.DiscardHandler), opts)
	r := &recorder{}
	n.Start()
	listening(t, n)
	n.Handle(r.handle)
	t.Cleanup(n.Close)
	return n, r
}

// listening waits until n listens: a notification sent before is not for it.
func listening(t *testing.T, n *Notifier) {
	t.Helper()
	select {
	case <-n.listening:
	case <-time.After(20 * time.Second):
		t.Fatal("the notifier is not listening 20 s after Start")
	}
}

func TestNotifierBatchesToOthers(t *testing.T) {
	dsn := testenv.Postgres(t)
	a, ra := start(t, dsn, NotifierOptions{})
	_, rb := start(t, dsn, NotifierOptions{})
	want := map[string]bool{}
	for i := range 2000 { // more than one payload
		id := fmt.Sprintf("%032x", i)
		want[id] = true
		a.Publish(KindAgents, id)
	}
	a.Publish(KindTokens)
	rb.waitFor(t, "every id", func(cs []Change) bool {
		return len(ids(cs, KindAgents)) == len(want) && slices.ContainsFunc(cs, func(c Change) bool { return c.Kind == KindTokens })
	})
	rb.mu.Lock()
	n := len(rb.changes)
	rb.mu.Unlock()
	if n > 20 {
		t.Errorf("2 001 changes came in %d notifications, want a few", n)
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if len(ra.changes) != 0 {
		t.Errorf("an instance received its own changes: %+v", ra.changes[:1])
	}
}

// More IDs than a round holds become one resync; so do more changes than
// the receiver's queue holds.
func TestNotifierStormsBecomeResyncs(t *testing.T) {
	dsn := testenv.Postgres(t)
	a, _ := start(t, dsn, NotifierOptions{MaxIDs: 100})
	_, rb := start(t, dsn, NotifierOptions{})
	var many []string
	for i := range 150 {
		many = append(many, fmt.Sprint(i))
	}
	a.Publish(KindAgents, many...) // one round
	rb.waitFor(t, "a resync for 150 ids over a bound of 100", func(cs []Change) bool { return resynced(cs, KindAgents) })

	blocked := make(chan struct{})
	release := make(chan struct{})
	c := NewNotifier(pool(t, dsn), slog.New(slog.DiscardHandler), NotifierOptions{Queue: 4})
	rc := &recorder{}
	var once sync.Once
	c.Start()
	c.Handle(func(ch Change) error {
		once.Do(func() { close(blocked); <-release }) // a slow handler
		return rc.handle(ch)
	})
	defer c.Close()
	listening(t, c)
	p := pool(t, dsn)
	for i := range 50 {
		if _, err := p.Exec(context.Background(), `SELECT pg_notify($1, $2)`, Channel, fmt.Sprintf("x|%s|%d", KindAgents, i)); err != nil {
			t.Fatal(err)
		}
	}
	<-blocked
	// The queue (4) overflows while the handler is blocked.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, owed := c.dropped.Load(KindAgents); owed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queue never overflowed: %d queued", len(c.queue))
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	rc.waitFor(t, "a resync after the queue overflowed", func(cs []Change) bool { return resynced(cs, KindAgents) })
}

// Changes that queue up while the handler is busy reach it as one change
// per kind, in the order kinds are published, each ID once: an instance
// behind catches up with a read per kind, not one per round or a reload.
func TestNotifierCoalescesABacklog(t *testing.T) {
	dsn := testenv.Postgres(t)
	blocked, release := make(chan struct{}), make(chan struct{})
	c := NewNotifier(pool(t, dsn), slog.New(slog.DiscardHandler), NotifierOptions{Queue: 256})
	rc := &recorder{}
	var once sync.Once
	c.Start()
	c.Handle(func(ch Change) error {
		once.Do(func() { close(blocked); <-release })
		return rc.handle(ch)
	})
	defer c.Close()
	<-c.listening
	p := pool(t, dsn)
	notify := func(kind string, id int) {
		if _, err := p.Exec(context.Background(), `SELECT pg_notify($1, $2)`, Channel, fmt.Sprintf("x|%s|%d", kind, id)); err != nil {
			t.Fatal(err)
		}
	}
	notify(KindAgents, -1) // taken by the handler, which blocks
	<-blocked
	for i := range 40 {
		notify(KindOffers, i%10)
		notify(KindAgents, i)
	}
	// Every notification is queued before the handler goes on.
	deadline := time.Now().Add(20 * time.Second)
	for len(c.queue) < 80 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 80 notifications queued", len(c.queue))
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	rc.waitFor(t, "the backlog", func(cs []Change) bool { return len(ids(cs, KindAgents)) == 41 && len(ids(cs, KindOffers)) == 10 })
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.changes) != 3 || rc.changes[1].Kind != KindAgents || rc.changes[2].Kind != KindOffers ||
		len(rc.changes[1].IDs) != 40 || len(rc.changes[2].IDs) != 10 || resynced(rc.changes, KindAgents) {
		t.Fatalf("handled %+v; want the first change, then one of agents (40 IDs) and one of offers (10 IDs)", rc.changes)
	}
}

func TestCoalesce(t *testing.T) {
	for name, tc := range map[string]struct{ in, want []Change }{
		"one": {in: []Change{{Kind: KindOffers, IDs: []string{"a"}}}, want: []Change{{Kind: KindOffers, IDs: []string{"a"}}}},
		"ids once, kinds in order": {
			in:   []Change{{Kind: KindOffers, IDs: []string{"a"}}, {Kind: KindAgents, IDs: []string{"x", "y"}}, {Kind: KindOffers, IDs: []string{"b", "a"}}},
			want: []Change{{Kind: KindAgents, IDs: []string{"x", "y"}}, {Kind: KindOffers, IDs: []string{"a", "b"}}},
		},
		"a resync wins": {
			in:   []Change{{Kind: KindAgents, IDs: []string{"x"}}, {Kind: KindAgents, Resync: true}, {Kind: KindAgents, IDs: []string{"y"}}},
			want: []Change{{Kind: KindAgents, Resync: true}},
		},
		"no ids": {
			in:   []Change{{Kind: KindState}, {Kind: KindState}},
			want: []Change{{Kind: KindState}},
		},
		"a backlog of many ids stays one read by id": {
			in:   []Change{{Kind: KindAgents, IDs: []string{"a", "b"}}, {Kind: KindAgents, IDs: []string{"c", "d"}}, {Kind: KindAgents, IDs: []string{"e", "a"}}},
			want: []Change{{Kind: KindAgents, IDs: []string{"a", "b", "c", "d", "e"}}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := coalesce(tc.in); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("coalesce = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A lost listening connection is re-established, and every kind is owed a
// resync (what was published meanwhile was not received).
func TestNotifierReconnectsAndResyncs(t *testing.T) {
	dsn := testenv.Postgres(t)
	a, _ := start(t, dsn, NotifierOptions{})
	_, rb := start(t, dsn, NotifierOptions{})
	p := pool(t, dsn)
	if _, err := p.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	rb.waitFor(t, "resyncs after the connection was lost", func(cs []Change) bool {
		return resynced(cs, KindAgents) && resynced(cs, KindTokens)
	})
	// Listening again: A's and B's (both were terminated).
	deadline := time.Now().Add(20 * time.Second)
	for {
		a.Publish(KindAgents, "after")
		time.Sleep(100 * time.Millisecond)
		rb.mu.Lock()
		got := ids(rb.changes, KindAgents)["after"]
		rb.mu.Unlock()
		if got {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no change received after reconnecting")
		}
	}
}
