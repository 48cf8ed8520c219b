package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/store"
)

// Session limits. Sessions and one-time login links live in the store, so
// every instance sharing it knows them and a restart logs nobody out.
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

// UserLookup gives a user's principal as it is now: a session of a user
// acts with the user's current role, and ends when the user is deleted.
type UserLookup interface {
	UserPrincipal(ctx context.Context, name string) (access.Principal, error)
}

// session is one logged-in browser as one request found it: what the
// store says of it then, and what this instance holds of it, which its
// requests share.
type session struct {
	*held
	csrf string
	// who acts through this session, as of the request that found it.
	who     access.Principal
	expires time.Time
}

// held is what this instance holds of a session, shared by its requests.
type held struct {
	id   string        // the cookie's secret
	key  string        // its SHA-256: the store's id and the local map's key
	done chan struct{} // closed at logout or expiry here: live streams end
	// flashes are outcomes of this session's actions, each to be shown
	// once on the page the action redirected to, by key; guarded by
	// sessions.mu. They stay on the instance that served the action.
	flashes map[string]flash
}

// flash is an action's outcome waiting for its page.
type flash struct {
	path    string // the page that shows it
	text    string
	expires time.Time
}

// sessions keeps sessions and one-time login links in the store, and the
// sessions seen on this instance (their live streams and flashes). Safe
// for concurrent use.
type sessions struct {
	st    store.Accounts
	users UserLookup
	now   func() time.Time

	mu    sync.Mutex
	local map[string]*held // by key; guarded by mu
}

func newSessions(st store.Accounts, users UserLookup, now func() time.Time) *sessions {
	return &sessions{st: st, users: users, now: now, local: map[string]*held{}}
}

// secret returns 32 random bytes, URL-safe base64.
func secret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("console: no randomness: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func keyOf(id string) []byte {
	sum := sha256.Sum256([]byte(id))
	return sum[:]
}

// create starts a session acting as who; beyond maxSessions the ones
// closest to expiry end.
func (s *sessions) create(ctx context.Context, who access.Principal) (*session, error) {
	now := s.now()
	_ = s.st.DeleteExpired(ctx, now)
	x := &session{held: &held{id: secret(), done: make(chan struct{})}, csrf: secret(), who: who, expires: now.Add(sessionTTL)}
	k := keyOf(x.id)
	x.key = string(k)
	p, _ := json.Marshal(who)
	if err := s.st.PutSession(ctx, store.Session{ID: k, Principal: p, CSRF: x.csrf, CreatedAt: now, ExpiresAt: x.expires}, maxSessions); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.local[x.key] = x.held
	s.mu.Unlock()
	return x, nil
}

// get returns the live session with this id, acting as its principal is
// now: a user's current role; none when the user is gone. An account of
// the OpenID Connect provider, which myriarchd cannot ask, acts with the
// role mapped at its sign-in until the session expires.
func (s *sessions) get(ctx context.Context, id string) (*session, bool) {
	if id == "" {
		return nil, false
	}
	k := keyOf(id)
	st, err := s.st.GetSession(ctx, k)
	if err != nil || !s.now().Before(st.ExpiresAt) {
		s.forget(string(k))
		return nil, false
	}
	var who access.Principal
	if json.Unmarshal(st.Principal, &who) != nil || who.Role == access.None {
		return nil, false
	}
	if who.Kind == access.KindUser {
		if who, err = s.users.UserPrincipal(ctx, who.Name); err != nil {
			s.end(ctx, &session{held: &held{key: string(k)}})
			return nil, false
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.local[string(k)]
	if !ok {
		h = &held{id: id, key: string(k), done: make(chan struct{})}
		s.local[h.key] = h
	}
	return &session{held: h, csrf: st.CSRF, who: who, expires: st.ExpiresAt}, true
}

// gone reports whether the store holds no live session of id: none at all
// (ended) or an expired one. A store that cannot be read says neither.
func (s *sessions) gone(ctx context.Context, id string) bool {
	if id == "" {
		return true
	}
	st, err := s.st.GetSession(ctx, keyOf(id))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return true
	case err != nil:
		return false
	default:
		return !s.now().Before(st.ExpiresAt)
	}
}

// valid reports whether x still lives in the store (a live stream asks
// from time to time: a logout on another instance ends it too).
func (s *sessions) valid(ctx context.Context, x *session) bool {
	_, ok := s.get(ctx, x.id)
	return ok
}

// end logs a session out, on every instance.
func (s *sessions) end(ctx context.Context, x *session) {
	_ = s.st.DeleteSession(ctx, []byte(x.key))
	s.forget(x.key)
}

// forget drops what this instance holds of a session, ending its streams.
func (s *sessions) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if x, ok := s.local[key]; ok {
		delete(s.local, key)
		close(x.done)
	}
}

// closeAll ends every live stream here (shutdown); the sessions stay.
func (s *sessions) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, x := range s.local {
		delete(s.local, k)
		close(x.done)
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

// newLink makes a one-time login secret whose session acts as who;
// beyond maxLinks the ones closest to expiry go.
func (s *sessions) newLink(ctx context.Context, who access.Principal) (string, time.Time, error) {
	k, exp := secret(), s.now().Add(linkTTL)
	p, _ := json.Marshal(who)
	return k, exp, s.st.PutLoginLink(ctx, keyOf(k), p, exp, maxLinks)
}

// useLink consumes a one-time login secret: the principal its session
// acts as, once, while it is valid, on whichever instance.
func (s *sessions) useLink(ctx context.Context, k string) (access.Principal, bool) {
	p, ok, err := s.st.UseLoginLink(ctx, keyOf(k), s.now())
	if err != nil || !ok {
		return access.Principal{}, false
	}
	var who access.Principal
	if json.Unmarshal(p, &who) != nil || who.Role == access.None {
		return access.Principal{}, false
	}
	return who, true
}
