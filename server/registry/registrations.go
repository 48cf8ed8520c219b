package registry

import (
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/myriarch/myriarch/server/backpressure"
	"github.com/myriarch/myriarch/server/store"
)

// RegistrationLimitError refuses a new instance UID: its credential has
// registered as many new agents as it may for now. The agent should come
// back after RetryAfter; agents already registered are not affected.
type RegistrationLimitError struct {
	Credential store.Credential
	RetryAfter time.Duration
}

func (e *RegistrationLimitError) Error() string {
	return fmt.Sprintf("%s %q has registered as many new agents as it may per minute; retry in %s",
		e.Credential.Kind, e.Credential.ID, e.RetryAfter.Round(time.Second))
}

// registrationLimit is the per-credential budget of new agents: a bucket
// per credential of perMinute, refilled over a minute. A site token in the
// wrong hands can then not grow the registry faster than that; a site that
// enrolls more hosts at once sees them registered over a few minutes.
type registrationLimit struct {
	perMinute int
	buckets   *backpressure.Keyed
	now       func() time.Time

	mu     sync.Mutex
	logged map[store.Credential]time.Time // last refusal logged per credential; guarded by mu
}

func newRegistrationLimit(perMinute int, now func() time.Time) *registrationLimit {
	if perMinute <= 0 {
		return nil
	}
	return &registrationLimit{
		perMinute: perMinute,
		buckets:   backpressure.NewKeyed(backpressure.KeyedOptions{Rate: float64(perMinute) / 60, Burst: perMinute, Now: now}),
		now:       now,
		logged:    map[store.Credential]time.Time{},
	}
}

// allow takes one registration of cred; when there is none it returns how
// long until there is one.
func (l *registrationLimit) allow(cred store.Credential) (time.Duration, bool) {
	if l == nil || l.buckets.Allow(cred.Kind+"\x00"+cred.ID) {
		return 0, true
	}
	return time.Duration(math.Ceil(60/float64(l.perMinute))) * time.Second, false
}

// logRefusal logs refused registrations at most once a minute per credential.
func (l *registrationLimit) logRefusal(log *slog.Logger, cred store.Credential) {
	now := l.now()
	l.mu.Lock()
	last, seen := l.logged[cred]
	log1 := !seen || now.Sub(last) >= time.Minute
	if log1 {
		if len(l.logged) > 10000 {
			clear(l.logged)
		}
		l.logged[cred] = now
	}
	l.mu.Unlock()
	if log1 {
		log.Warn("refusing new agents: the credential registers more than its budget (logged once a minute)",
			"credential_kind", cred.Kind, "credential", cred.ID, "per_minute", l.perMinute)
	}
}
