package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// testDeliveries: the outbox keeps deliveries across a restart, gives the
// due ones earliest first, settles each attempt once (delivered, due again,
// given up), lets one sender claim each attempt, takes a claim never
// settled for lost when it runs out, and lists them newest first by
// webhook, failure and pending.
func testDeliveries(t *testing.T, h *handle) {
	t0 := time.Unix(1796636312, 0).UTC()
	mk := func(id, hook string, created, next time.Duration) store.Delivery {
		return store.Delivery{ID: id, Webhook: hook, Event: "config_failed", Fleet: "edge", Body: []byte(`{"id":"` + id + `"}`),
			Created: t0.Add(created), NextAt: t0.Add(next)}
	}
	put := func(ds ...store.Delivery) []string {
		t.Helper()
		kept, err := h.db.PutDeliveries(ctx, ds)
		must(t, err)
		return kept
	}
	// a is put twice (a batch that grew before its first attempt): the
	// second body and due time replace the first.
	grown := mk("a", "ops", 0, 0)
	grown.Body = []byte(`{"id":"a","count":2}`)
	if kept := put(mk("a", "ops", 0, time.Hour), mk("b", "ops", time.Second, 2*time.Second), mk("c", "all", 2*time.Second, time.Second), grown); len(kept) != 0 {
		t.Fatalf("kept %v", kept)
	}
	ids := func(ds []store.Delivery) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.ID)
		}
		return out
	}
	h.beforeAndAfterRestart(func(db store.Store) {
		due, err := db.DueDeliveries(ctx, store.DueQuery{Now: t0.Add(time.Second), Limit: 10})
		must(t, err)
		if got := ids(due); !slices.Equal(got, []string{"a", "c"}) {
			t.Fatalf("due at 1 s: %v", got)
		}
		if d := due[0]; string(d.Body) != `{"id":"a","count":2}` || d.Webhook != "ops" || d.Event != "config_failed" || d.Fleet != "edge" ||
			!d.Created.Equal(t0) || !d.NextAt.Equal(t0) || d.Attempts != 0 || !d.Delivered.IsZero() {
			t.Fatalf("read back %+v", d)
		}
	})
	// a: fails, due again; then delivered. c: fails for good.
	claim := func(d store.Delivery, until time.Time) bool {
		t.Helper()
		ok, err := h.db.ClaimDelivery(ctx, d, until)
		must(t, err)
		return ok
	}
	due, err := h.db.DueDeliveries(ctx, store.DueQuery{Now: t0.Add(time.Second), Limit: 10})
	must(t, err)
	a, c := due[0], due[1]
	if !claim(a, t0.Add(time.Hour)) || !claim(c, t0.Add(time.Hour)) {
		t.Fatal("the due deliveries are not claimed")
	}
	// What was read before the claim claims nothing more: another sender,
	// or a later pass, with the same read.
	if claim(a, t0.Add(time.Hour)) {
		t.Fatal("a claimed twice from one read")
	}
	must(t, h.db.SettleDelivery(ctx, "a", store.Settlement{Attempt: 1, At: t0.Add(time.Second), Err: "HTTP 500", NextAt: t0.Add(time.Minute)}))
	must(t, h.db.SettleDelivery(ctx, "c", store.Settlement{Attempt: 1, At: t0.Add(time.Second), Err: "HTTP 410"}))
	// A read from before the attempt was settled claims nothing either.
	if claim(a, t0.Add(time.Hour)) {
		t.Fatal("a claimed again from a read older than its settlement")
	}
	// Attempted ones are not replaced any more: their ids come back.
	late := mk("a", "ops", 0, 0)
	late.Body = []byte(`{"id":"a","count":3}`)
	if kept := put(late, mk("c", "all", 0, 0)); !slices.Equal(kept, []string{"a", "c"}) {
		t.Fatalf("kept %v, want a and c", kept)
	}
	due, err = h.db.DueDeliveries(ctx, store.DueQuery{Now: t0.Add(30 * time.Second), Limit: 10})
	must(t, err)
	if got := ids(due); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("due at 30 s: %v", got)
	}
	// a's second attempt is claimed and never settled (its sender died):
	// a is due again when the claim runs out, and the third attempt is
	// the one recorded; the lost one's late outcome changes nothing.
	dueOne := func(at time.Time, id string) (store.Delivery, bool) {
		t.Helper()
		due, err := h.db.DueDeliveries(ctx, store.DueQuery{Now: at, Limit: 10})
		must(t, err)
		for _, d := range due {
			if d.ID == id {
				return d, true
			}
		}
		return store.Delivery{}, false
	}
	if d, ok := dueOne(t0.Add(time.Minute), "a"); !ok || d.Attempts != 1 || !claim(d, t0.Add(90*time.Second)) {
		t.Fatalf("a's second attempt: %+v", d)
	}
	if _, ok := dueOne(t0.Add(80*time.Second), "a"); ok {
		t.Fatal("a due while its claim holds")
	}
	if d, ok := dueOne(t0.Add(90*time.Second), "a"); !ok || d.Attempts != 2 || !claim(d, t0.Add(3*time.Minute)) {
		t.Fatalf("a after its lost attempt: %+v", d)
	}
	if err := h.db.SettleDelivery(ctx, "a", store.Settlement{Attempt: 2, At: t0.Add(time.Minute), Delivered: true}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("settling the lost attempt: %v", err)
	}
	must(t, h.db.SettleDelivery(ctx, "a", store.Settlement{Attempt: 3, At: t0.Add(time.Minute), Delivered: true}))
	if err := h.db.SettleDelivery(ctx, "a", store.Settlement{Attempt: 3, At: t0.Add(2 * time.Minute), Err: "late"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("settling a delivered one: %v", err)
	}
	if err := h.db.SettleDelivery(ctx, "zz", store.Settlement{Attempt: 1, At: t0, Delivered: true}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("settling an unknown one: %v", err)
	}
	h.beforeAndAfterRestart(func(db store.Store) {
		all, err := db.ListDeliveries(ctx, store.DeliveryQuery{})
		must(t, err)
		if got := ids(all); !slices.Equal(got, []string{"c", "b", "a"}) {
			t.Fatalf("all, newest first: %v", got)
		}
		a := all[2]
		if a.Attempts != 3 || !a.NextAt.IsZero() || !a.Delivered.Equal(t0.Add(time.Minute)) || a.LastError != "" || !a.GaveUp.IsZero() {
			t.Fatalf("a: %+v", a)
		}
		c := all[0]
		if c.Attempts != 1 || !c.NextAt.IsZero() || !c.GaveUp.Equal(t0.Add(time.Second)) || c.LastError != "HTTP 410" {
			t.Fatalf("c: %+v", c)
		}
		if n, err := db.PendingDeliveries(ctx); err != nil || n != 1 {
			t.Fatalf("pending: %d, %v; want 1", n, err)
		}
		for _, tc := range []struct {
			q    store.DeliveryQuery
			want []string
		}{
			{store.DeliveryQuery{Webhook: "ops"}, []string{"b", "a"}},
			{store.DeliveryQuery{Failed: true}, []string{"c"}},
			{store.DeliveryQuery{Pending: true}, []string{"b"}},
			{store.DeliveryQuery{Webhook: "all", Pending: true}, nil},
			{store.DeliveryQuery{Limit: 1}, []string{"c"}},
		} {
			got, err := db.ListDeliveries(ctx, tc.q)
			must(t, err)
			if !slices.Equal(ids(got), tc.want) {
				t.Errorf("list %+v: %v, want %v", tc.q, ids(got), tc.want)
			}
		}
	})
	// The due ones come earliest first, at most limit.
	var many []store.Delivery
	for i := range 50 {
		many = append(many, mk(fmt.Sprintf("m%02d", i), "ops", 10*time.Second, time.Duration(50-i)*time.Millisecond))
	}
	put(many...)
	due, err = h.db.DueDeliveries(ctx, store.DueQuery{Now: t0.Add(time.Hour), Limit: 5})
	must(t, err)
	if got := ids(due); !slices.Equal(got, []string{"m49", "m48", "m47", "m46", "m45"}) {
		t.Fatalf("earliest 5: %v", got)
	}
	// Of one webhook, or of none of some.
	put(mk("p1", "pager", 0, 3*time.Second), mk("x1", "gone", 0, 4*time.Second))
	for _, tc := range []struct {
		q    store.DueQuery
		want []string
	}{
		{store.DueQuery{Webhook: "pager"}, []string{"p1"}},
		{store.DueQuery{Except: []string{"ops"}}, []string{"p1", "x1"}},
		{store.DueQuery{Except: []string{"ops", "pager"}}, []string{"x1"}},
		{store.DueQuery{Webhook: "pager", Except: []string{"pager"}}, nil},
	} {
		tc.q.Now = t0.Add(time.Hour)
		due, err := h.db.DueDeliveries(ctx, tc.q)
		must(t, err)
		if got := ids(due); !slices.Equal(got, tc.want) {
			t.Errorf("due %+v: %v, want %v", tc.q, got, tc.want)
		}
	}
}
