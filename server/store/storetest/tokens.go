package storetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/tokens"
)

func testTokens(t *testing.T, h *handle) {
	db := h.db
	base := time.Unix(1700000000, 123456789).UTC()
	edge, _, _ := tokens.New("edge", map[string]string{"wave": "1", "site.id": "par-01"}, base)
	bare, _, _ := tokens.New("bare", nil, base.Add(time.Second))
	empty, _, _ := tokens.New("empty", map[string]string{}, base.Add(2*time.Second))
	for _, tok := range []tokens.Token{empty, edge, bare} {
		must(t, db.InsertToken(ctx, tok))
	}
	dup, _, _ := tokens.New("edge", nil, base)
	if err := db.InsertToken(ctx, dup); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second token named edge: err = %v, want ErrConflict", err)
	}
	revoked := base.Add(time.Hour)
	must(t, db.RevokeToken(ctx, bare.ID, revoked))
	// Revoking again keeps the first time.
	must(t, db.RevokeToken(ctx, bare.ID, revoked.Add(time.Hour)))
	if err := db.RevokeToken(ctx, "no-such-id", revoked); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoking an unknown token: err = %v, want ErrNotFound", err)
	}
	bare.RevokedAt = &revoked
	want := []tokens.Token{edge, bare, empty} // by creation time
	h.beforeAndAfterRestart(func(db store.Store) {
		got, err := db.ListTokens(ctx)
		must(t, err)
		if len(got) != len(want) {
			t.Fatalf("%d tokens, want %d", len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.ID != w.ID || g.Name != w.Name || !reflect.DeepEqual(g.Hash, w.Hash) || !g.CreatedAt.Equal(w.CreatedAt) ||
				(g.RevokedAt == nil) != (w.RevokedAt == nil) || (g.RevokedAt != nil && !g.RevokedAt.Equal(*w.RevokedAt)) ||
				len(g.Labels) != len(w.Labels) || (len(w.Labels) > 0 && !reflect.DeepEqual(g.Labels, w.Labels)) {
				t.Errorf("token %d = %+v, want %+v", i, g, w)
			}
		}
	})
}
