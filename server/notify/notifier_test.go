package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

// bodies is a receiver keeping the bodies it accepted, checked as Verify does.
type bodies struct {
	secret []byte
	mu     sync.Mutex
	got    []Body // guarded by mu
	bad    int    // guarded by mu
}

func (b *bodies) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body Body
	err := Verify(b.secret, r.Header.Get(TimestampHeader), r.Header.Get(SignatureHeader), raw, time.Now())
	if err == nil {
		err = json.Unmarshal(raw, &body)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil || body.ID != r.Header.Get(DeliveryHeader) || body.Event != r.Header.Get(EventHeader) {
		b.bad++
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	b.got = append(b.got, body)
}

func (b *bodies) list() ([]Body, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Body(nil), b.got...), b.bad
}

// outboxAndReceiver opens a real SQLite store and starts a receiver
// checking signatures, both closed when t ends.
func outboxAndReceiver(t *testing.T) (context.Context, *sqlite.DB, *bodies, *httptest.Server) {
	t.Helper()
	ctx := context.Background()
	db := openOutbox(t)
	rc := &bodies{secret: []byte("a-secret-of-enough-bytes")}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return ctx, db, rc, srv
}

// 500 collectors of one fleet failing within the window are one body per
// webhook that wants them; a webhook limited to another fleet gets none;
// an event nobody wants is not stored; a follower stores what it saw and
// sends nothing; a batch open at Close is stored and sent by the next.
func TestNotifierBatchesAndDelivers(t *testing.T) {
	ctx, db, rc, srv := outboxAndReceiver(t)
	secret := rc.secret
	hooks := []estate.Webhook{
		{Name: "ops", URL: srv.URL, Secret: secret, Events: []string{estate.EventOfferFailed, estate.EventRolloutPaused}},
		{Name: "core-only", URL: srv.URL, Secret: secret, Events: []string{estate.EventOfferFailed}, Fleets: []string{"core"}},
	}
	var leads atomic.Bool
	fleets := func(agent string) string { return "edge" }
	mk := func() *Notifier {
		n := New(Config{Store: db, Window: 300 * time.Millisecond, Poll: 20 * time.Millisecond, Leads: leads.Load, FleetOf: fleets})
		n.SetWebhooks(hooks)
		n.Start()
		return n
	}

	// A follower: it stores the batch and sends nothing.
	n := mk()
	for i := range 500 {
		n.Add(Occurrence{Event: estate.EventOfferFailed, Agent: fmt.Sprintf("agent-%03d", i), Message: "checksum mismatch"})
	}
	n.Add(Occurrence{Event: estate.EventConfigWarning, Agent: "agent-000", Message: "nobody listens"})
	testkit.WaitWithin(t, 10*time.Second, "the batch stored", func() bool {
		k, err := db.PendingDeliveries(ctx)
		return err == nil && k == 1
	})
	// A batch still open when the instance stops is stored at Close.
	n.Add(Occurrence{Event: estate.EventRolloutPaused, Fleet: "edge", Message: "paused after 5 failed offers"})
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if k, _ := db.PendingDeliveries(ctx); k != 2 {
		t.Fatalf("after Close: %d pending, want 2", k)
	}
	if got, _ := rc.list(); len(got) != 0 {
		t.Fatalf("a follower sent %d bodies", len(got))
	}
	if st := n.Stats(); st.Events[estate.EventOfferFailed] != 500 || st.Events[estate.EventConfigWarning] != 1 {
		t.Fatalf("stats: %+v", st)
	}

	// The next instance leads: it sends both.
	leads.Store(true)
	n = mk()
	defer n.Close()
	testkit.WaitWithin(t, 10*time.Second, "both delivered", func() bool {
		got, _ := rc.list()
		return len(got) == 2
	})
	got, bad := rc.list()
	if bad != 0 {
		t.Fatalf("%d bodies failed the receiver's checks", bad)
	}
	byEvent := map[string]Body{}
	for _, b := range got {
		byEvent[b.Event] = b
	}
	f := byEvent[estate.EventOfferFailed]
	if f.Webhook != "ops" || f.Fleet != "edge" || f.Count != 500 || len(f.Items) != 500 || f.Omitted != 0 || f.Items[0].Message != "checksum mismatch" {
		t.Fatalf("offer_failed body: webhook %q fleet %q count %d items %d", f.Webhook, f.Fleet, f.Count, len(f.Items))
	}
	if p := byEvent[estate.EventRolloutPaused]; p.Count != 1 || p.Items[0].Message != "paused after 5 failed offers" {
		t.Fatalf("rollout_paused body: %+v", p)
	}
	testkit.WaitWithin(t, 10*time.Second, "the outbox settled", func() bool {
		k, err := db.PendingDeliveries(ctx)
		return err == nil && k == 0
	})
	ds, err := db.ListDeliveries(ctx, store.DeliveryQuery{})
	if err != nil || len(ds) != 2 {
		t.Fatalf("deliveries: %d, %v", len(ds), err)
	}
	for _, d := range ds {
		if d.Delivered.IsZero() || d.Attempts != 1 {
			t.Errorf("delivery %s: %+v", d.ID, d)
		}
	}
	testkit.WaitWithin(t, 5*time.Second, "the delivered counted", func() bool { return n.Stats().Delivered["ops"] == 2 })
}

// Add never blocks: past MaxQueued waiting, occurrences are counted dropped.
func TestNotifierBoundsWhatWaits(t *testing.T) {
	n := New(Config{Store: nil})
	n.SetWebhooks([]estate.Webhook{{Name: "ops", Events: []string{estate.EventOfferFailed}}})
	for range MaxQueued + 10 {
		n.Add(Occurrence{Event: estate.EventOfferFailed, Fleet: "edge"})
	}
	if st := n.Stats(); st.Dropped != 10 || st.Events[estate.EventOfferFailed] != MaxQueued+10 {
		t.Fatalf("stats: dropped %d, events %d", st.Dropped, st.Events[estate.EventOfferFailed])
	}
}

// stopLoops ends n's background work without Close's last write, as a
// crash would.
func stopLoops(n *Notifier) {
	n.cancel()
	n.done.Wait()
}

// An open batch is in the store from its first pass, rewritten as it
// grows: after a crash (no Close) the next leader sends it, with what the
// last pass stored. A batch whose delivery was attempted before its last
// pass sends what it gathered since under a new id: nothing is lost, and
// no occurrence is said twice.
func TestNotifierOpenBatchesSurviveACrash(t *testing.T) {
	ctx, db, rc, srv := outboxAndReceiver(t)
	secret := rc.secret
	hooks := []estate.Webhook{{Name: "ops", URL: srv.URL, Secret: secret, Events: []string{estate.EventConfigFailed}}}
	var leads atomic.Bool
	mk := func(window time.Duration) *Notifier {
		n := New(Config{Store: db, Window: window, Poll: 20 * time.Millisecond, Leads: leads.Load})
		n.SetWebhooks(hooks)
		n.Start()
		return n
	}
	stored := func() []Body {
		ds, err := db.ListDeliveries(ctx, store.DeliveryQuery{Pending: true})
		if err != nil {
			t.Fatal(err)
		}
		var out []Body
		for _, d := range ds {
			var b Body
			if err := json.Unmarshal(d.Body, &b); err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
		return out
	}
	n := mk(time.Second)
	n.Add(Occurrence{Event: estate.EventConfigFailed, Fleet: "edge", Agent: "a1", Message: "first"})
	testkit.WaitWithin(t, 10*time.Second, "the open batch stored", func() bool { b := stored(); return len(b) == 1 && b[0].Count == 1 })
	n.Add(Occurrence{Event: estate.EventConfigFailed, Fleet: "edge", Agent: "a2", Message: "second"})
	testkit.WaitWithin(t, 10*time.Second, "the grown batch stored", func() bool { b := stored(); return len(b) == 1 && b[0].Count == 2 })
	stopLoops(n) // a crash: no Close

	leads.Store(true)
	n = mk(time.Second)
	testkit.WaitWithin(t, 10*time.Second, "the crashed instance's batch delivered", func() bool { got, _ := rc.list(); return len(got) == 1 })
	if got, _ := rc.list(); got[0].Count != 2 || got[0].Items[1].Message != "second" {
		t.Fatalf("delivered %+v", got[0])
	}
	testkit.WaitWithin(t, 10*time.Second, "the delivery recorded", func() bool { return len(stored()) == 0 })
	stopLoops(n)

	// The stored delivery of an open batch was attempted already (its pass
	// came too late): the batch goes again whole, under a new id.
	leads.Store(false)
	n = mk(time.Hour)
	defer n.Close()
	n.Add(Occurrence{Event: estate.EventConfigFailed, Fleet: "core", Agent: "b1", Message: "one"})
	testkit.WaitWithin(t, 10*time.Second, "the core batch stored", func() bool { return len(stored()) == 1 })
	due, err := db.DueDeliveries(ctx, store.DueQuery{Now: time.Now().Add(2 * time.Hour)})
	if err != nil || len(due) != 1 {
		t.Fatalf("due: %v %v", due, err)
	}
	first := due[0].ID
	if ok, err := db.ClaimDelivery(ctx, due[0], time.Now().Add(time.Hour)); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if err := db.SettleDelivery(ctx, first, store.Settlement{Attempt: 1, At: time.Now(), Err: "HTTP 500", NextAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	n.Add(Occurrence{Event: estate.EventConfigFailed, Fleet: "core", Agent: "b2", Message: "two"})
	messages := func(b Body) string {
		var m []string
		for _, it := range b.Items {
			m = append(m, it.Message)
		}
		return fmt.Sprintf("%d:%s", b.Count, strings.Join(m, ","))
	}
	newer := func() (Body, bool) {
		for _, b := range stored() {
			if b.ID != first {
				return b, true
			}
		}
		return Body{}, false
	}
	testkit.WaitWithin(t, 10*time.Second, "what came since under a new id", func() bool { b, ok := newer(); return ok && messages(b) == "1:two" })
	n.Add(Occurrence{Event: estate.EventConfigFailed, Fleet: "core", Agent: "b3", Message: "three"})
	testkit.WaitWithin(t, 10*time.Second, "later passes write to the new id", func() bool {
		b, ok := newer()
		return ok && len(stored()) == 2 && messages(b) == "2:two,three"
	})
	for _, b := range stored() {
		if b.ID == first && messages(b) != "1:one" {
			t.Errorf("the attempted delivery changed: %s", messages(b))
		}
	}
}

// A receiver that never answers holds at most PerWebhook attempts until
// the Sender's timeout; another webhook's body is delivered meanwhile.
func TestNotifierHangingReceiverStallsNothingElse(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	secret := []byte("a-secret-of-enough-bytes")
	release := make(chan struct{})
	var hanging atomic.Int32
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hanging.Add(1)
		defer hanging.Add(-1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer stuck.Close()
	defer close(release)
	rc := &bodies{secret: secret}
	good := httptest.NewServer(rc)
	defer good.Close()
	n := New(Config{Store: db, Window: 50 * time.Millisecond, Poll: 20 * time.Millisecond, Sender: SenderSettings{Timeout: time.Hour}})
	n.SetWebhooks([]estate.Webhook{
		{Name: "stuck", URL: stuck.URL, Secret: secret, Events: []string{estate.EventOfferFailed}},
		{Name: "good", URL: good.URL, Secret: secret, Events: []string{estate.EventRolloutPaused}},
	})
	n.Start()
	defer n.Close()
	for _, fleet := range []string{"a", "b", "c", "d", "e"} { // five bodies for it
		n.Add(Occurrence{Event: estate.EventOfferFailed, Fleet: fleet, Message: "to the stuck receiver"})
	}
	testkit.WaitWithin(t, 10*time.Second, "the stuck receiver holding its two attempts", func() bool {
		k, _ := db.PendingDeliveries(ctx)
		return hanging.Load() == DefaultPerWebhook && k == 5
	})
	n.Add(Occurrence{Event: estate.EventRolloutPaused, Fleet: "edge", Message: "to the good receiver"})
	testkit.WaitWithin(t, 10*time.Second, "the good receiver's body", func() bool { got, _ := rc.list(); return len(got) == 1 })
	if h := hanging.Load(); h != DefaultPerWebhook {
		t.Fatalf("%d attempts at the stuck receiver, want %d while the other body was delivered", h, DefaultPerWebhook)
	}
}

// Until the estate's webhooks are set (a start, while the estate loads),
// a pending delivery is neither sent nor given up, and what comes in is
// neither stored nor dropped: once they are set, both go out.
func TestNothingGoesBeforeTheWebhooksAreKnown(t *testing.T) {
	ctx, db, rc, srv := outboxAndReceiver(t)
	hooks := []estate.Webhook{{Name: "ops", URL: srv.URL, Secret: rc.secret, Events: []string{estate.EventOfferFailed, estate.EventEstateReloadFailed}}}
	// A delivery a previous run stored, due now.
	if _, err := db.PutDeliveries(ctx, []store.Delivery{{ID: "01a25163-bf5f-7073-95dd-211893986a08", Webhook: "ops", Event: estate.EventEstateReloadFailed,
		Body: []byte(`{"id":"01a25163-bf5f-7073-95dd-211893986a08","event":"estate_reload_failed"}`), Created: time.Now().Add(-time.Minute), NextAt: time.Now().Add(-time.Second)}}); err != nil {
		t.Fatal(err)
	}
	n := New(Config{Store: db, Window: time.Millisecond, Poll: 20 * time.Millisecond, Leads: func() bool { return true }})
	n.Add(Occurrence{Event: estate.EventOfferFailed, Agent: "a", Message: "checksum mismatch"})
	for range 3 { // passes as the loops would make them
		if err := n.gather(ctx, time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		n.send(ctx)
		n.sender.Wait()
	}
	if k, _ := db.PendingDeliveries(ctx); k != 1 {
		t.Fatalf("before the webhooks are known: %d pending, want the 1 stored", k)
	}
	if got, _ := rc.list(); len(got) != 0 {
		t.Fatalf("%d bodies sent before the webhooks were known", len(got))
	}
	n.SetWebhooks(hooks)
	n.Start()
	defer n.Close()
	testkit.WaitWithin(t, 10*time.Second, "both delivered", func() bool {
		got, _ := rc.list()
		return len(got) == 2
	})
	if st := n.Stats(); st.Dropped != 0 || st.GivenUp["ops"] != 0 {
		t.Fatalf("stats %+v", st)
	}
}
