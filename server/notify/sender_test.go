package notify

import (
	"errors"
	"fmt"

	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testkit"

	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

// receiver is a webhook receiver that checks every request's signature as
// a receiver should, and answers what the test says.
type receiver struct {
	t      *testing.T
	secret []byte
	mu     sync.Mutex
	answer func() (int, time.Duration) // guarded by mu
	got    []string                    // delivery ids accepted; guarded by mu
	bad    []string                    // what failed a check; guarded by mu
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	err := Verify(rc.secret, r.Header.Get(TimestampHeader), r.Header.Get(SignatureHeader), body, time.Now())
	rc.mu.Lock()
	answer := rc.answer
	if err != nil || r.Header.Get("Content-Type") != "application/json" || r.Header.Get(DeliveryHeader) == "" || r.Header.Get(EventHeader) == "" {
		rc.bad = append(rc.bad, r.Header.Get(DeliveryHeader)+": "+errText(err))
	}
	rc.mu.Unlock()
	code, wait := answer()
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-r.Context().Done():
			return
		}
	}
	if code/100 == 2 {
		rc.mu.Lock()
		rc.got = append(rc.got, r.Header.Get(DeliveryHeader))
		rc.mu.Unlock()
	}
	w.WriteHeader(code)
	io.WriteString(w, http.StatusText(code))
}

func errText(err error) string {
	if err == nil {
		return "headers"
	}
	return err.Error()
}

func (rc *receiver) set(code int, wait time.Duration) {
	rc.mu.Lock()
	rc.answer = func() (int, time.Duration) { return code, wait }
	rc.mu.Unlock()
}

// An outbox on the real SQLite store, a receiver that answers 500, then
// slowly, then not at all (closed), then 200: each attempt is recorded
// with its reason and retried with backoff until delivered; a webhook gone
// from the estate and a delivery older than GiveUpAfter are given up.
func TestSenderRetriesUntilDelivered(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	secret := []byte("0123456789abcdef-secret")
	rc := &receiver{t: t, secret: secret}
	rc.set(http.StatusInternalServerError, 0)
	srv := httptest.NewServer(rc)
	defer srv.Close()
	now := time.Now().UTC()
	clock := func() time.Time { return now }
	hooks := map[string]Hook{"ops": {URL: srv.URL + "/hook", Secret: secret}}
	var hooksMu sync.Mutex
	s := &Sender{Outbox: db, Now: clock, SenderSettings: SenderSettings{Timeout: 300 * time.Millisecond},
		Names: func() []string { return []string{"ops"} },
		Hooks: func(name string) (Hook, bool) {
			hooksMu.Lock()
			defer hooksMu.Unlock()
			h, ok := hooks[name]
			return h, ok
		}}
	body := []byte(`{"event":"config_failed","fleet":"edge","count":1}`)
	if _, err := db.PutDeliveries(ctx, []store.Delivery{
		{ID: "d1", Webhook: "ops", Event: "config_failed", Fleet: "edge", Body: body, Created: now, NextAt: now},
		{ID: "gone", Webhook: "removed", Event: "config_failed", Body: body, Created: now, NextAt: now},
	}); err != nil {
		t.Fatal(err)
	}
	get := func(id string) store.Delivery {
		all, err := db.ListDeliveries(ctx, store.DeliveryQuery{})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range all {
			if d.ID == id {
				return d
			}
		}
		t.Fatalf("no delivery %s", id)
		return store.Delivery{}
	}
	send := func(want int) {
		t.Helper()
		n, err := s.Send(ctx)
		if err != nil || n != want {
			t.Fatalf("send: %d attempted (want %d), %v", n, want, err)
		}
	}
	send(2)
	d := get("d1")
	if d.Attempts != 1 || d.LastError != "HTTP 500: Internal Server Error" || d.NextAt.Sub(now) != 5*time.Second {
		t.Fatalf("after a 500: %+v", d)
	}
	if g := get("gone"); g.GaveUp.IsZero() || !strings.Contains(g.LastError, "no longer in the estate") {
		t.Fatalf("a removed webhook's delivery: %+v", g)
	}
	send(0) // not due yet
	now = now.Add(5 * time.Second)
	rc.set(http.StatusOK, time.Second) // slower than the Sender waits
	send(1)
	if d := get("d1"); d.Attempts != 2 || d.LastError != "no answer within 300ms" || d.NextAt.Sub(now) != 10*time.Second {
		t.Fatalf("after no answer: %+v", d)
	}
	now = now.Add(10 * time.Second)
	hooksMu.Lock()
	hooks["ops"] = Hook{URL: "http://127.0.0.1:1/hook", Secret: secret} // nothing listens
	hooksMu.Unlock()
	send(1)
	if d := get("d1"); d.Attempts != 3 || !strings.Contains(d.LastError, "connection refused") {
		t.Fatalf("after a refused connection: %+v", d)
	}
	now = now.Add(20 * time.Second)
	hooksMu.Lock()
	hooks["ops"] = Hook{URL: srv.URL + "/hook", Secret: secret}
	hooksMu.Unlock()
	rc.set(http.StatusNoContent, 0)
	send(1)
	if d := get("d1"); d.Attempts != 4 || d.Delivered.IsZero() || !d.NextAt.IsZero() || d.LastError != "" {
		t.Fatalf("delivered: %+v", d)
	}
	rc.mu.Lock()
	got, bad := rc.got, rc.bad
	rc.mu.Unlock()
	if len(got) != 1 || got[0] != "d1" || len(bad) != 0 {
		t.Fatalf("receiver accepted %v, refused %v", got, bad)
	}

	// Older than GiveUpAfter at its next attempt: given up with its reason.
	rc.set(http.StatusBadGateway, 0)
	old := now.Add(-24*time.Hour + 2*time.Second) // the next attempt would be 3 s past a day
	if _, err := db.PutDeliveries(ctx, []store.Delivery{{ID: "old", Webhook: "ops", Event: "rollout_paused", Body: body, Created: old, NextAt: now, Attempts: 0}}); err != nil {
		t.Fatal(err)
	}
	send(1)
	if d := get("old"); d.GaveUp.IsZero() || !strings.Contains(d.LastError, "HTTP 502") || !strings.Contains(d.LastError, "given up after 1 attempts") {
		t.Fatalf("old: %+v", d)
	}
}

func TestDefaultBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: 5 * time.Second, 2: 10 * time.Second, 3: 20 * time.Second, 10: 2560 * time.Second, 11: time.Hour, 50: time.Hour} {
		if got := DefaultBackoff(n); got != want {
			t.Errorf("backoff after %d failures: %s, want %s", n, got, want)
		}
	}
}

// Two instances' Senders on one outbox, dispatching at once and over and
// over (a leadership change that overlaps, or passes that read a delivery
// while its attempt ends): each delivery is posted once.
func TestSendersOnOneOutboxPostEachDeliveryOnce(t *testing.T) {
	ctx := context.Background()
	db := openOutbox(t)
	secret := []byte("0123456789abcdef-secret")
	rc := &receiver{t: t, secret: secret}
	rc.set(http.StatusOK, 0)
	srv := httptest.NewServer(rc)
	defer srv.Close()
	now := time.Now().UTC()
	var ds []store.Delivery
	for i := range 60 {
		ds = append(ds, store.Delivery{ID: fmt.Sprintf("d%02d", i), Webhook: "ops", Event: "config_failed", Body: []byte(`{}`), Created: now, NextAt: now})
	}
	if _, err := db.PutDeliveries(ctx, ds); err != nil {
		t.Fatal(err)
	}
	mk := func() *Sender {
		return &Sender{Outbox: db, SenderSettings: SenderSettings{Workers: 8, PerWebhook: 8},
			Names: func() []string { return []string{"ops"} },
			Hooks: func(string) (Hook, bool) { return Hook{URL: srv.URL, Secret: secret}, true }}
	}
	senders := []*Sender{mk(), mk()}
	testkit.WaitFor(t, "every delivery settled", func() bool {
		var wg sync.WaitGroup
		for _, s := range senders {
			wg.Go(func() {
				for range 5 {
					if _, err := s.Dispatch(ctx); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		n, err := db.PendingDeliveries(ctx)
		return err == nil && n == 0
	})
	for _, s := range senders {
		s.Wait()
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	seen := map[string]int{}
	for _, id := range rc.got {
		seen[id]++
	}
	for _, d := range ds {
		if seen[d.ID] != 1 {
			t.Errorf("%s posted %d times", d.ID, seen[d.ID])
		}
	}
}

// A Sender stopped while the receiver takes a body still records what
// came of the attempt (delivered, or failed with the reason), so it is
// not left claimed until the claim runs out.
func TestSenderStoppedMidAttemptRecordsTheOutcome(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	db := openOutbox(t)
	secret := []byte("0123456789abcdef-secret")
	taken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cancel() // the instance stops as the receiver takes the body
		w.WriteHeader(http.StatusNoContent)
	}))
	defer taken.Close()
	now := time.Now().UTC()
	if _, err := db.PutDeliveries(context.Background(), []store.Delivery{
		{ID: "taken", Webhook: "ops", Event: "config_failed", Body: []byte(`{}`), Created: now, NextAt: now},
	}); err != nil {
		t.Fatal(err)
	}
	s := &Sender{Outbox: db, Names: func() []string { return []string{"ops"} },
		Hooks: func(string) (Hook, bool) { return Hook{URL: taken.URL, Secret: secret}, true }}
	if n, err := s.Send(ctx); n != 1 || err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("send: %d, %v", n, err)
	}
	all, err := db.ListDeliveries(context.Background(), store.DeliveryQuery{})
	if err != nil || len(all) != 1 {
		t.Fatalf("list: %v %v", all, err)
	}
	if d := all[0]; d.Attempts != 1 || d.Delivered.IsZero() && d.LastError == "" {
		t.Fatalf("an attempt ended by the stop is not recorded: %+v", d)
	}
}

// openOutbox is an outbox on the real SQLite store, closed with the test.
func openOutbox(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
