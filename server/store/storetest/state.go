package storetest

import (
	"errors"
	"maps"
	"testing"

	"github.com/myriarch/myriarch/server/store"
)

func testState(t *testing.T, h *handle) {
	db := h.db
	must(t, db.PutState(ctx, "rollout/edge", []byte("v1")))
	must(t, db.PutState(ctx, "rollout/edge", []byte("v2"))) // overwrite
	must(t, db.PutState(ctx, "rollout/core", []byte{}))
	must(t, db.PutState(ctx, "rolloutX", []byte("not under rollout/")))
	// Characters that LIKE or GLOB would treat as wildcards are plain here.
	must(t, db.PutState(ctx, "q%_*/a", []byte("1")))
	must(t, db.PutState(ctx, "qXY/a", []byte("2")))
	must(t, db.PutState(ctx, "gone", []byte("x")))
	must(t, db.DeleteState(ctx, "gone"))
	must(t, db.DeleteState(ctx, "never-there"))
	h.beforeAndAfterRestart(func(db store.Store) {
		if v, err := db.GetState(ctx, "rollout/edge"); err != nil || string(v) != "v2" {
			t.Fatalf("rollout/edge = %q, %v", v, err)
		}
		if v, err := db.GetState(ctx, "rollout/core"); err != nil || len(v) != 0 {
			t.Fatalf("rollout/core = %q, %v", v, err)
		}
		if _, err := db.GetState(ctx, "gone"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("deleted key: err = %v, want ErrNotFound", err)
		}
		for prefix, want := range map[string][]string{
			"rollout/": {"rollout/edge", "rollout/core"},
			"q%_*":     {"q%_*/a"},
			"nothing":  nil,
			"":         {"rollout/edge", "rollout/core", "rolloutX", "q%_*/a", "qXY/a"},
		} {
			m, err := db.ListState(ctx, prefix)
			must(t, err)
			got := map[string]bool{}
			for k := range m {
				got[k] = true
			}
			w := map[string]bool{}
			for _, k := range want {
				w[k] = true
			}
			if !maps.Equal(got, w) {
				t.Errorf("ListState(%q) = %v, want %v", prefix, got, w)
			}
		}
	})
}
