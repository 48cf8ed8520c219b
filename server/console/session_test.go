package console

import (
	"testing"
	"time"
)

func TestSessionsExpireAndAreBounded(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	s := newSessions(func() time.Time { return now })
	first := s.create()
	if got, ok := s.get(first.id); !ok || got != first {
		t.Fatal("a new session does not log in")
	}
	if _, ok := s.get(""); ok {
		t.Fatal("an empty cookie logs in")
	}
	now = now.Add(sessionTTL)
	if _, ok := s.get(first.id); ok {
		t.Fatal("a session outlived its lifetime")
	}
	select {
	case <-first.done:
	default:
		t.Fatal("an expired session's streams were not told")
	}

	var all []*session
	for range maxSessions + 1 {
		all = append(all, s.create())
		now = now.Add(time.Millisecond)
	}
	if _, ok := s.get(all[0].id); ok {
		t.Fatal("more sessions than the bound: the oldest still logs in")
	}
	if _, ok := s.get(all[maxSessions].id); !ok {
		t.Fatal("the newest session was dropped")
	}
}

// An action's message is shown once, in its session, on its page, while
// it is valid; a session keeps at most maxFlashes.
func TestFlashesAreTheSessionsOwnAndShownOnce(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	s := newSessions(func() time.Time { return now })
	mine, other := s.create(), s.create()
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
	busy := s.create()
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
	s := newSessions(func() time.Time { return now })
	k, exp := s.newLink()
	if exp != now.Add(linkTTL) {
		t.Fatalf("link expires %s", exp)
	}
	if s.useLink(mangled(k)) {
		t.Fatal("a wrong secret logs in")
	}
	if !s.useLink(k) || s.useLink(k) {
		t.Fatal("a link must log in exactly once")
	}
	late, _ := s.newLink()
	now = now.Add(linkTTL)
	if s.useLink(late) {
		t.Fatal("an expired link logs in")
	}
	var links []string
	for range maxLinks + 1 {
		k, _ := s.newLink()
		links = append(links, k)
		now = now.Add(time.Millisecond)
	}
	if s.useLink(links[0]) || !s.useLink(links[maxLinks]) {
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
