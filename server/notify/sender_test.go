package notify

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

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
