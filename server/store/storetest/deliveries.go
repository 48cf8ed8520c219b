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
// given up) and lists them newest first by webhook, failure and pending.
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
	must(t, h.db.SettleDelivery(ctx, "a", store.Settlement{At: t0.Add(time.Second), Err: "HTTP 500", NextAt: t0.Add(time.Minute)}))
	must(t, h.db.SettleDelivery(ctx, "c", store.Settlement{At: t0.Add(time.Second), Err: "HTTP 410"}))
	// Attempted ones are not replaced any more: their ids come back.
	late := mk("a", "ops", 0, 0)
	late.Body = []byte(`{"id":"a","count":3}`)
	if kept := put(late, mk("c", "all", 0, 0)); !slices.Equal(kept, []string{"a", "c"}) {
		t.Fatalf("kept %v, want a and c", kept)
	}
	due, err := h.db.DueDeliveries(ctx, store.DueQuery{Now: t0.Add(30 * time.Second), Limit: 10})
	must(t, err)
	if got := ids(due); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("due at 30 s: %v", got)
	}
	must(t, h.db.SettleDelivery(ctx, "a", store.Settlement{At: t0.Add(time.Minute), Delivered: true}))
	if err := h.db.SettleDelivery(ctx, "a", store.Settlement{At: t0.Add(2 * time.Minute), Err: "late"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("settling a delivered one: %v", err)
	}
	if err := h.db.SettleDelivery(ctx, "zz", store.Settlement{At: t0, Delivered: true}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("settling an unknown one: %v", err)
	}
	h.beforeAndAfterRestart(func(db store.Store) {
		all, err := db.ListDeliveries(ctx, store.DeliveryQuery{})
		must(t, err)
		if got := ids(all); !slices.Equal(got, []string{"c", "b", "a"}) {
			t.Fatalf("all, newest first: %v", got)
		}
		a := all[2]
		if a.Attempts != 2 || !a.NextAt.IsZero() || !a.Delivered.Equal(t0.Add(time.Minute)) || a.LastError != "" || !a.GaveUp.IsZero() {
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
