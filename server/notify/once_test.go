package notify

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/store"
)

// failingStore refuses PutDeliveries while fail is set.
type failingStore struct {
	Store
	fail bool
}

func (f *failingStore) PutDeliveries(ctx context.Context, ds []store.Delivery) ([]string, error) {
	if f.fail {
		return nil, errors.New("store unavailable")
	}
	return f.Store.PutDeliveries(ctx, ds)
}

// Each occurrence is in exactly one delivery, whatever order the
// occurrences come in and whenever the Sender attempts a delivery: the
// gathering passes are driven by hand at chosen times.
func TestEachOccurrenceInOneDelivery(t *testing.T) {
	t0 := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
	const window = 200 * time.Millisecond
	hooks := []estate.Webhook{{Name: "ops", URL: "http://127.0.0.1:1/", Secret: []byte("a-secret-of-enough-bytes"), Events: []string{estate.EventOfferFailed}}}
	occ := func(agent string, at time.Duration) Occurrence {
		return Occurrence{Event: estate.EventOfferFailed, Fleet: "edge", Agent: agent, Message: "bad archive", Time: t0.Add(at)}
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, n *Notifier, fs *failingStore, claim func())
		want map[string]int // agent → deliveries listing it
	}{
		{"an occurrence of an earlier time comes in late", func(t *testing.T, n *Notifier, _ *failingStore, _ func()) {
			n.Add(occ("b", 10*time.Millisecond))
			pass(t, n, t0.Add(15*time.Millisecond))
			n.Add(occ("a", 0))
			pass(t, n, t0.Add(30*time.Millisecond))
			pass(t, n, t0.Add(window+time.Millisecond))
		}, map[string]int{"a": 1, "b": 1}},
		{"attempted before the batch's last pass, nothing new since", func(t *testing.T, n *Notifier, _ *failingStore, claim func()) {
			n.Add(occ("a", 0))
			pass(t, n, t0.Add(5*time.Millisecond))
			claim()
			pass(t, n, t0.Add(window+time.Millisecond))
		}, map[string]int{"a": 1}},
		{"attempted before the batch's last pass, one more since", func(t *testing.T, n *Notifier, _ *failingStore, claim func()) {
			n.Add(occ("a", 0))
			pass(t, n, t0.Add(5*time.Millisecond))
			claim()
			n.Add(occ("b", 50*time.Millisecond))
			pass(t, n, t0.Add(window+time.Millisecond))
		}, map[string]int{"a": 1, "b": 1}},
		{"the store refuses the last pass, the delivery is attempted meanwhile", func(t *testing.T, n *Notifier, fs *failingStore, claim func()) {
			n.Add(occ("a", 0))
			pass(t, n, t0.Add(5*time.Millisecond))
			n.Add(occ("b", 50*time.Millisecond))
			fs.fail = true
			if err := n.gather(context.Background(), t0.Add(window+time.Millisecond)); err == nil {
				t.Fatal("the refused write was not reported")
			}
			fs.fail = false
			claim()
			pass(t, n, t0.Add(window+30*time.Millisecond))
		}, map[string]int{"a": 1, "b": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := openOutbox(t)
			fs := &failingStore{Store: db}
			n := New(Config{Store: fs, Window: window, Poll: 10 * time.Millisecond, Now: func() time.Time { return t0 }})
			n.SetWebhooks(hooks)
			// The Sender's claim of the stored delivery, as an attempt
			// that starts before the batch's last pass.
			claim := func() {
				ds, err := db.ListDeliveries(ctx, store.DeliveryQuery{})
				if err != nil || len(ds) != 1 {
					t.Fatalf("deliveries before the claim: %d %v", len(ds), err)
				}
				if ok, err := db.ClaimDelivery(ctx, ds[0], t0.Add(time.Hour)); !ok || err != nil {
					t.Fatalf("claim: %v %v", ok, err)
				}
			}
			tc.run(t, n, fs, claim)
			ds, err := db.ListDeliveries(ctx, store.DeliveryQuery{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, d := range ds {
				var b Body
				if err := json.Unmarshal(d.Body, &b); err != nil {
					t.Fatal(err)
				}
				if b.Count == 0 || len(b.Items) == 0 {
					t.Errorf("delivery %s says nothing: %s", d.ID, d.Body)
				}
				for _, it := range b.Items {
					got[it.Agent]++
				}
			}
			if !equalCounts(got, tc.want) {
				t.Errorf("agents listed %v, want %v; %d deliveries", got, tc.want, len(ds))
				for _, d := range ds {
					t.Logf("%s attempts %d: %s", d.ID, d.Attempts, d.Body)
				}
			}
		})
	}
}

// pass runs one gathering pass at now, which must store what it gathered.
func pass(t *testing.T, n *Notifier, now time.Time) {
	t.Helper()
	if err := n.gather(context.Background(), now); err != nil {
		t.Fatalf("pass at %s: %v", now.Format(time.StampMilli), err)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if a[k] != b[k] {
			return false
		}
	}
	return true
}
