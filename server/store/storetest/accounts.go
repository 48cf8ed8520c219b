package storetest

import (
	"bytes"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

func testUsers(t *testing.T, h *handle) {
	db := h.db
	base := time.Unix(1700000000, 0).UTC()
	alice := store.User{Name: "alice", Role: "admin", Password: "$argon2id$x", CreatedAt: base, UpdatedAt: base}
	bob := store.User{Name: "bob", Role: "operator", Fleets: []string{"edge", "core"}, CreatedAt: base, UpdatedAt: base}
	carol := store.User{Name: "carol", Role: "viewer", Fleets: []string{}, CreatedAt: base, UpdatedAt: base}
	for _, u := range []store.User{bob, alice, carol} {
		must(t, db.InsertUser(ctx, u))
	}
	if err := db.InsertUser(ctx, store.User{Name: "alice", Role: "viewer", CreatedAt: base, UpdatedAt: base}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second alice: %v, want ErrConflict", err)
	}
	// alice is the only admin over every fleet: she may be neither
	// demoted, scoped nor deleted.
	for _, change := range []store.User{{Name: "alice", Role: "operator"}, {Name: "alice", Role: "admin", Fleets: []string{"edge"}}} {
		change.UpdatedAt = base
		if err := db.UpdateUser(ctx, change); !errors.Is(err, store.ErrLastAdmin) {
			t.Fatalf("%+v: %v, want ErrLastAdmin", change, err)
		}
	}
	if err := db.DeleteUser(ctx, "alice"); !errors.Is(err, store.ErrLastAdmin) {
		t.Fatalf("deleting the last admin: %v", err)
	}
	if err := db.UpdateUser(ctx, store.User{Name: "nobody", Role: "viewer"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("updating nobody: %v", err)
	}
	if err := db.DeleteUser(ctx, "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleting nobody: %v", err)
	}
	// With a second admin, the first may go.
	bob.Role, bob.Fleets, bob.Password, bob.UpdatedAt = "admin", nil, "$argon2id$y", base.Add(time.Minute)
	must(t, db.UpdateUser(ctx, bob))
	must(t, db.DeleteUser(ctx, "alice"))
	want := []store.User{bob, carol}
	h.beforeAndAfterRestart(func(db store.Store) {
		got, err := db.ListUsers(ctx)
		must(t, err)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("users %+v\nwant %+v", got, want)
		}
		if u, err := db.GetUser(ctx, "carol"); err != nil || u.Fleets == nil || len(u.Fleets) != 0 {
			t.Fatalf("carol scoped to no fleet: %+v %v", u, err)
		}
		if _, err := db.GetUser(ctx, "alice"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("alice after her deletion: %v", err)
		}
	})
}

// Two handles (two instances) each taking away one of the last two admins
// at once leave one.
func testLastAdminTwoHandles(t *testing.T, h *handle) {
	base := time.Unix(1700000000, 0).UTC()
	for _, n := range []string{"a", "b"} {
		must(t, h.db.InsertUser(ctx, store.User{Name: n, Role: "admin", CreatedAt: base, UpdatedAt: base}))
	}
	other := h.open(t)
	defer other.Close()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, db := range []store.Store{h.db, other} {
		wg.Go(func() { errs[i] = db.DeleteUser(ctx, []string{"a", "b"}[i]) })
	}
	wg.Wait()
	users, err := h.db.ListUsers(ctx)
	must(t, err)
	if len(users) != 1 || (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("after two deletions at once: users %+v, errors %v", users, errs)
	}
}

func testAPIKeys(t *testing.T, h *handle) {
	db := h.db
	base := time.Unix(1700000000, 0).UTC()
	exp := base.Add(24 * time.Hour)
	k1 := store.APIKey{ID: "k1", Name: "ci", Role: "operator", Fleets: []string{"edge"}, Hash: []byte{1, 2, 3}, CreatedBy: "alice", CreatedAt: base, ExpiresAt: &exp}
	k2 := store.APIKey{ID: "k2", Name: "ci", Role: "viewer", Hash: []byte{4, 5, 6}, CreatedBy: "admin-token", CreatedAt: base.Add(time.Second)}
	must(t, db.InsertAPIKey(ctx, k1))
	must(t, db.InsertAPIKey(ctx, k2))
	if err := db.InsertAPIKey(ctx, store.APIKey{ID: "k3", Name: "x", Role: "viewer", Hash: []byte{1, 2, 3}, CreatedAt: base}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a key with a taken hash: %v", err)
	}
	rev := base.Add(time.Hour)
	must(t, db.RevokeAPIKey(ctx, "k2", rev))
	must(t, db.RevokeAPIKey(ctx, "k2", rev.Add(time.Hour))) // keeps the first time
	if err := db.RevokeAPIKey(ctx, "nope", rev); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoking an unknown key: %v", err)
	}
	k2.RevokedAt = &rev
	h.beforeAndAfterRestart(func(db store.Store) {
		got, err := db.ListAPIKeys(ctx)
		must(t, err)
		if !reflect.DeepEqual(got, []store.APIKey{k1, k2}) {
			t.Fatalf("keys %+v", got)
		}
		k, err := db.APIKeyByHash(ctx, []byte{4, 5, 6})
		if err != nil || k.ID != "k2" || k.RevokedAt == nil {
			t.Fatalf("by hash: %+v %v", k, err)
		}
		if _, err := db.APIKeyByHash(ctx, []byte{9}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown hash: %v", err)
		}
	})
}

func testSessions(t *testing.T, h *handle) {
	db := h.db
	base := time.Unix(1700000000, 0).UTC()
	for i := range 5 {
		must(t, db.PutSession(ctx, store.Session{ID: []byte{byte(i)}, Principal: []byte(`{"name":"a"}`), CSRF: "c",
			CreatedAt: base, ExpiresAt: base.Add(time.Duration(i+1) * time.Hour)}, 3))
	}
	// Beyond 3, the ones closest to expiry went.
	for i := range 5 {
		_, err := db.GetSession(ctx, []byte{byte(i)})
		if (i < 2) != errors.Is(err, store.ErrNotFound) {
			t.Fatalf("session %d: %v", i, err)
		}
	}
	must(t, db.DeleteSession(ctx, []byte{4}))
	must(t, db.DeleteSession(ctx, []byte{4}))
	must(t, db.PutLoginLink(ctx, []byte("l1"), []byte(`{"name":"admin-token"}`), base.Add(time.Minute), 10))
	must(t, db.PutLoginLink(ctx, []byte("l2"), []byte(`{}`), base.Add(time.Minute), 10))
	other := h.open(t) // a second instance
	defer other.Close()
	if p, ok, err := other.UseLoginLink(ctx, []byte("l1"), base); !ok || err != nil || string(p) != `{"name":"admin-token"}` {
		t.Fatalf("a link used on another instance: %s %v %v", p, ok, err)
	}
	if _, ok, _ := db.UseLoginLink(ctx, []byte("l1"), base); ok {
		t.Fatal("a link used twice")
	}
	if _, ok, _ := db.UseLoginLink(ctx, []byte("l2"), base.Add(time.Hour)); ok {
		t.Fatal("an expired link used")
	}
	must(t, db.PutSession(ctx, store.Session{ID: []byte{9}, Principal: []byte(`{}`), CreatedAt: base, ExpiresAt: base.Add(2 * time.Hour)}, 10))
	must(t, db.DeleteExpired(ctx, base.Add(150*time.Minute)))
	h.beforeAndAfterRestart(func(db store.Store) {
		s, err := db.GetSession(ctx, []byte{2})
		if err != nil || !bytes.Equal(s.Principal, []byte(`{"name":"a"}`)) || s.CSRF != "c" || !s.ExpiresAt.Equal(base.Add(3*time.Hour)) {
			t.Fatalf("console session {2}: %+v %v", s, err)
		}
		if _, err := db.GetSession(ctx, []byte{9}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an expired session kept: %v", err)
		}
	})
}
