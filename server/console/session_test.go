package console

import (
	"context"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/accounts"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

var ctx = context.Background()

var adminWho = access.Principal{Name: access.AdminTokenName, Kind: access.KindAdminToken, Role: access.Admin}

// testStore opens a SQLite store in a temporary directory.
func testStore(t *testing.T) store.Store {
	t.Helper()
	db, err := sqlite.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// testSessions is a sessions keeper over a fresh store, and the store's
// accounts.
func testSessions(t *testing.T, now *time.Time) (*sessions, *accounts.Service) {
	t.Helper()
	db := testStore(t)
	clock := func() time.Time { return *now }
	users := accounts.New(db, accounts.Options{Now: clock})
	return newSessions(db, users, clock), users
}

func (s *sessions) mustCreate(t *testing.T, who access.Principal) *session {
	t.Helper()
	x, err := s.create(ctx, who)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestSessionsExpireAndAreBounded(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	s, _ := testSessions(t, &now)
	first := s.mustCreate(t, adminWho)
	if got, ok := s.get(ctx, first.id); !ok || got.held != first.held || got.who.Role != access.Admin {
		t.Fatal("a new session does not log in")
	}
	if _, ok := s.get(ctx, ""); ok {
		t.Fatal("an empty cookie logs in")
	}
	now = now.Add(sessionTTL)
	if _, ok := s.get(ctx, first.id); ok {
		t.Fatal("a session outlived its lifetime")
	}
	select {
	case <-first.done:
	default:
		t.Fatal("an expired session's streams were not told")
	}

	var all []*session
	for range maxSessions + 1 {
		all = append(all, s.mustCreate(t, adminWho))
		now = now.Add(time.Millisecond)
	}
	if _, ok := s.get(ctx, all[0].id); ok {
		t.Fatal("more sessions than the bound: the oldest still logs in")
	}
	if _, ok := s.get(ctx, all[maxSessions].id); !ok {
		t.Fatal("the newest session was dropped")
	}
}

// A session lives in the store: another instance's keeper finds it, a
// logout on one ends it on the other, and a user's session acts with the
// user's current role, ending when the user is deleted.
func TestSessionsAreSharedAndFollowTheUser(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	a, users := testSessions(t, &now)
	b := newSessions(a.st, a.users, a.now) // a second instance on the same store
	x := a.mustCreate(t, adminWho)
	y, ok := b.get(ctx, x.id)
	if !ok || y.csrf != x.csrf {
		t.Fatal("another instance does not know the session")
	}
	b.end(ctx, y)
	if _, ok := a.get(ctx, x.id); ok {
		t.Fatal("a session ended on one instance lives on the other")
	}
	select {
	case <-x.done:
	default:
		t.Fatal("the ended session's streams were not told")
	}

	for _, u := range []accounts.UserRequest{{Name: "root", Role: "admin"}, {Name: "vic", Role: "operator"}} {
		if _, err := users.CreateUser(ctx, adminWho, u); err != nil {
			t.Fatal(err)
		}
	}
	vic := a.mustCreate(t, access.Principal{Name: "vic", Kind: access.KindUser, Role: access.Operator})
	if _, err := users.UpdateUser(ctx, adminWho, "vic", accounts.UserPatch{Role: ptr("viewer")}); err != nil {
		t.Fatal(err)
	}
	if got, ok := b.get(ctx, vic.id); !ok || got.who.Role != access.Viewer {
		t.Fatalf("the session after a demotion: %v %+v", ok, got)
	}
	if err := users.DeleteUser(ctx, adminWho, "vic"); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.get(ctx, vic.id); ok {
		t.Fatal("a deleted user's session still logs in")
	}
}

func ptr[T any](v T) *T { return &v }

// An action's message is shown once, in its session, on its page, while
// it is valid; a session keeps at most maxFlashes.
func TestFlashesAreTheSessionsOwnAndShownOnce(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	s, _ := testSessions(t, &now)
	mine, other := s.mustCreate(t, adminWho), s.mustCreate(t, adminWho)
	tests := []struct {
		name          string
		take          *session
		path, key     string
		after         time.Duration
		want, wantNow string // want: the first take; wantNow: a take right after it
	}{
		{name: "its page, once", take: mine, path: "/tokens", want: "done", wantNow: ""},
		{name: "another session", take: other, path: "/tokens", want: "", wantNow: "done"},
		{name: "another page", take: mine, path: "/fleets", want: "", wantNow: "done"},
		{name: "another key", take: mine, path: "/tokens", key: "made-up", want: "", wantNow: "done"},
		{name: "no key", take: mine, path: "/tokens", key: "-", want: "", wantNow: "done"},
		{name: "expired", take: mine, path: "/tokens", after: flashTTL, want: "", wantNow: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := s.addFlash(mine, "/tokens", "done")
			switch tt.key {
			case "":
			case "-":
				k = ""
			default:
				k = tt.key
			}
			now = now.Add(tt.after)
			if got := s.takeFlash(tt.take, tt.path, k); got != tt.want {
				t.Fatalf("first take %q, want %q", got, tt.want)
			}
			if tt.key != "" {
				return
			}
			if got := s.takeFlash(mine, "/tokens", k); got != tt.wantNow {
				t.Fatalf("its own take after that %q, want %q", got, tt.wantNow)
			}
		})
	}
	busy := s.mustCreate(t, adminWho)
	var keys []string
	for range maxFlashes + 1 {
		keys = append(keys, s.addFlash(busy, "/fleets", "paused"))
		now = now.Add(time.Millisecond)
	}
	if len(busy.flashes) > maxFlashes {
		t.Fatalf("%d flashes kept, bound %d", len(busy.flashes), maxFlashes)
	}
	if s.takeFlash(busy, "/fleets", keys[0]) != "" || s.takeFlash(busy, "/fleets", keys[maxFlashes]) != "paused" {
		t.Fatal("beyond the bound the oldest flash must go, the newest stay")
	}
}

func TestLoginLinksWorkOnceWhileValid(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	s, _ := testSessions(t, &now)
	link := func() string {
		t.Helper()
		k, exp, err := s.newLink(ctx, adminWho)
		if err != nil || exp != now.Add(linkTTL) {
			t.Fatalf("link expires %s: %v", exp, err)
		}
		return k
	}
	use := func(k string) bool {
		who, ok := s.useLink(ctx, k)
		return ok && who.Role == access.Admin
	}
	k := link()
	if use(mangled(k)) {
		t.Fatal("a wrong secret logs in")
	}
	if !use(k) || use(k) {
		t.Fatal("a link must log in exactly once")
	}
	late := link()
	now = now.Add(linkTTL)
	if use(late) {
		t.Fatal("an expired link logs in")
	}
	var links []string
	for range maxLinks + 1 {
		links = append(links, link())
		now = now.Add(time.Millisecond)
	}
	if use(links[0]) || !use(links[maxLinks]) {
		t.Fatal("more links than the bound: the oldest must go, the newest stay")
	}
}

// mangled is secret with its first character changed, whatever it was
// (secrets are random: a fixed replacement would be right one time in 64).
func mangled(secret string) string {
	if secret[0] == 'A' {
		return "B" + secret[1:]
	}
	return "A" + secret[1:]
}

// Requests of one browser run at once: each has its own view of the
// session (who acts, the CSRF token), and they share what this instance
// holds of it (its live streams, its flashes).
func TestRequestsOfOneSessionRunAtOnce(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	s, _ := testSessions(t, &now)
	x := s.mustCreate(t, adminWho)
	a, ok := s.get(ctx, x.id)
	if !ok {
		t.Fatal("no session")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 {
			s.get(ctx, x.id)
		}
	}()
	for range 20 {
		if a.who.Role != access.Admin || a.csrf != x.csrf {
			t.Error("a request's view of its session changed under it")
		}
	}
	<-done
	if b, _ := s.get(ctx, x.id); b.held != a.held {
		t.Fatal("two requests of one session hold it apart")
	}
}
