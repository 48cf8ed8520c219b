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

	"github.com/jackc/pgx/v5"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/store/postgres"
)

// TestMain fails the package when a test leaves a goroutine running, and
// stops the private PostgreSQL the tests started.
func TestMain(m *testing.M) { os.Exit(testenv.MainWithPostgres(m)) }

// open opens the shared store at dsn for one instance of a test.
func open(t *testing.T, dsn string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// notify sends a raw notification, as another instance would.
func notify(t *testing.T, db *postgres.DB, payload string) {
	t.Helper()
	if err := db.Notify(context.Background(), []string{payload}); err != nil {
		t.Fatal(err)
	}
}

// terminate ends the sessions of the test's database that query selects
// (by pid), as a lost connection or a dead instance would.
func terminate(t *testing.T, dsn, query string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM (`+query+`) AS s`); err != nil {
		t.Fatal(err)
	}
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

// received polls until cond holds over what was received.
func (r *recorder) received(t *testing.T, what string, cond func([]Change) bool) {
	t.Helper()
	testkit.WaitWithin(t, 20*time.Second, what, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return cond(r.changes)
	})
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
	n := NewNotifier(open(t, dsn), slog.New(slog.DiscardHandler), opts)
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
	rb.received(t, "every id", func(cs []Change) bool {
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
	rb.received(t, "a resync for 150 ids over a bound of 100", func(cs []Change) bool { return resynced(cs, KindAgents) })

	blocked := make(chan struct{})
	release := make(chan struct{})
	c := NewNotifier(open(t, dsn), slog.New(slog.DiscardHandler), NotifierOptions{Queue: 4})
	rc := &recorder{}
	var once sync.Once
	c.Start()
	c.Handle(func(ch Change) error {
		once.Do(func() { close(blocked); <-release }) // a slow handler
		return rc.handle(ch)
	})
	defer c.Close()
	listening(t, c)
	p := open(t, dsn)
	for i := range 50 {
		notify(t, p, fmt.Sprintf("x|%s|%d", KindAgents, i))
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
	rc.received(t, "a resync after the queue overflowed", func(cs []Change) bool { return resynced(cs, KindAgents) })
}

// Changes that queue up while the handler is busy reach it as one change
// per kind, in the order kinds are published, each ID once: an instance
// behind catches up with a read per kind, not one per round or a reload.
func TestNotifierCoalescesABacklog(t *testing.T) {
	dsn := testenv.Postgres(t)
	blocked, release := make(chan struct{}), make(chan struct{})
	c := NewNotifier(open(t, dsn), slog.New(slog.DiscardHandler), NotifierOptions{Queue: 256})
	rc := &recorder{}
	var once sync.Once
	c.Start()
	c.Handle(func(ch Change) error {
		once.Do(func() { close(blocked); <-release })
		return rc.handle(ch)
	})
	defer c.Close()
	<-c.listening
	p := open(t, dsn)
	send := func(kind string, id int) { notify(t, p, fmt.Sprintf("x|%s|%d", kind, id)) }
	send(KindAgents, -1) // taken by the handler, which blocks
	<-blocked
	for i := range 40 {
		send(KindOffers, i%10)
		send(KindAgents, i)
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
	rc.received(t, "the backlog", func(cs []Change) bool { return len(ids(cs, KindAgents)) == 41 && len(ids(cs, KindOffers)) == 10 })
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
	terminate(t, dsn, `SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND datname = current_database()`)
	rb.received(t, "resyncs after the connection was lost", func(cs []Change) bool {
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
