package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
)

// Session limits. Sessions live in memory: a restart of myriarchd logs
// every operator out.
const (
	sessionTTL  = 12 * time.Hour
	maxSessions = 1000
	linkTTL     = 15 * time.Minute
	maxLinks    = 64
	// An action's outcome waits this long for the page it redirects to,
	// at most maxFlashes per session.
	flashTTL   = time.Minute
	maxFlashes = 16
)

// session is one logged-in browser.
type session struct {
	id      string
	csrf    string
	expires time.Time
	done    chan struct{} // closed at logout or expiry: live streams end
	// flashes are outcomes of this session's actions, each to be shown
	// once on the page the action redirected to, by key; guarded by
	// sessions.mu.
	flashes map[string]flash
}

// flash is an action's outcome waiting for its page.
type flash struct {
	path    string // the page that shows it
	text    string
	expires time.Time
}

// sessions holds sessions and one-time login links; safe for concurrent use.
type sessions struct {
	now func() time.Time

	mu    sync.Mutex
	byID  map[string]*session  // guarded by mu
	links map[string]time.Time // one-time login secrets → expiry; guarded by mu
}

func newSessions(now func() time.Time) *sessions {
	return &sessions{now: now, byID: map[string]*session{}, links: map[string]time.Time{}}
}

// secret returns 32 random bytes, URL-safe base64.
func secret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("console: no randomness: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create starts a session; beyond maxSessions the one closest to expiry ends.
func (s *sessions) create() *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	if len(s.byID) >= maxSessions {
		var oldest *session
		for _, x := range s.byID {
			if oldest == nil || x.expires.Before(oldest.expires) {
				oldest = x
			}
		}
		s.endLocked(oldest)
	}
	x := &session{id: secret(), csrf: secret(), expires: s.now().Add(sessionTTL), done: make(chan struct{})}
	s.byID[x.id] = x
	return x
}

// get returns the live session with this id.
func (s *sessions) get(id string) (*session, bool) {
	if id == "" {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x, ok := s.byID[id]
	if ok && !s.now().Before(x.expires) {
		s.endLocked(x)
		return nil, false
	}
	return x, ok
}

// end logs a session out.
func (s *sessions) end(x *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID[x.id] == x {
		s.endLocked(x)
	}
}

func (s *sessions) endLocked(x *session) {
	delete(s.byID, x.id)
	close(x.done)
}

func (s *sessions) expireLocked() {
	now := s.now()
	for _, x := range s.byID {
		if !now.Before(x.expires) {
			s.endLocked(x)
		}
	}
	for k, exp := range s.links {
		if !now.Before(exp) {
			delete(s.links, k)
		}
	}
}

// closeAll ends every session (shutdown).
func (s *sessions) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.byID {
		s.endLocked(x)
	}
}

// addFlash keeps text for the page at path of session x, to be shown once
// there, and returns the key the page's URL names it by. Beyond maxFlashes
// the one closest to expiry goes.
func (s *sessions) addFlash(x *session, path, text string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	oldest := ""
	for k, f := range x.flashes {
		switch {
		case !now.Before(f.expires):
			delete(x.flashes, k)
		case oldest == "" || f.expires.Before(x.flashes[oldest].expires):
			oldest = k
		}
	}
	if len(x.flashes) >= maxFlashes {
		delete(x.flashes, oldest)
	}
	if x.flashes == nil {
		x.flashes = map[string]flash{}
	}
	k := flashKey()
	x.flashes[k] = flash{path: path, text: text, expires: now.Add(flashTTL)}
	return k
}

// takeFlash returns the text kept under key for the page at path of
// session x, once, while it is valid; "" for any other key.
func (s *sessions) takeFlash(x *session, path, key string) string {
	if key == "" {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := x.flashes[key]
	if !ok || f.path != path {
		return ""
	}
	delete(x.flashes, key)
	if !s.now().Before(f.expires) {
		return ""
	}
	return f.text
}

// flashKey returns 12 random bytes, URL-safe base64: a flash's key needs
// only to be unique within its session, which alone can take it.
func flashKey() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("console: no randomness: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// newLink makes a one-time login secret; beyond maxLinks the oldest goes.
func (s *sessions) newLink() (string, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	if len(s.links) >= maxLinks {
		var oldest string
		for k, exp := range s.links {
			if oldest == "" || exp.Before(s.links[oldest]) {
				oldest = k
			}
		}
		delete(s.links, oldest)
	}
	k, exp := secret(), s.now().Add(linkTTL)
	s.links[k] = exp
	return k, exp
}

// useLink consumes a one-time login secret: true once, while it is valid.
func (s *sessions) useLink(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for stored, exp := range s.links {
		if subtle.ConstantTimeCompare([]byte(stored), []byte(k)) == 1 {
			delete(s.links, stored)
			return s.now().Before(exp)
		}
	}
	return false
}
