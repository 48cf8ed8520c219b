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
