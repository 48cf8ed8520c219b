package registry

import (
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/stamp"
	"github.com/myriarch/myriarch/server/store"
)

// An identity conflict (an instance UID presented with another credential
// than the one it is bound to) is refused by Report, which records
// nothing; the caller records the refusals it should with RecordConflict.
// A process that keeps presenting the UID, reconnecting at once after each
// refusal, must not replace the agent's history with its attempts: each
// pair of instance UID and presented credential gets at most one
// identity_conflict event a minute, and the refusals of the rest of the
// minute are counted, not recorded one by one. The count is written in
// the pair's next event: the one of its next refusal once the minute is
// over, or one written when the minute is over (a minute later again for
// a pair still refused, so that a steady flood costs its victim one event
// a minute).

// conflictWindowLen is how long one recorded conflict of a pair stands for
// the others.
const conflictWindowLen = time.Minute

// maxConflictWindows bounds the pairs followed at once; a new pair past it
// is not recorded until windows end.
const maxConflictWindows = 16384

type conflictKey struct {
	uid  uuid.UUID
	cred store.Credential
}

type conflictWindow struct {
	start stamp.Stamp // when the pair's last event was recorded
	more  int         // refusals since, not recorded
	last  string      // where the last of them came from
}

// conflicts are the pairs whose conflicts are being counted.
type conflicts struct {
	mu         sync.Mutex
	windows    map[conflictKey]*conflictWindow // guarded by mu
	unfollowed int                             // new pairs not recorded: too many at once; guarded by mu
	lastSweep  stamp.Stamp                     // guarded by mu
}

// conflictNote is an event to add to an agent's history once conflicts.mu
// is released.
type conflictNote struct {
	uid uuid.UUID
	msg string
}

// RecordConflict records in uid's history that a connection from `from`
// (an address) presenting it with cred was refused, unless an event of
// the same pair was recorded within the minute: that refusal is then
// counted for the pair's next event. It reports whether an event was
// recorded.
func (r *Registry) RecordConflict(uid uuid.UUID, cred store.Credential, from string) bool {
	now := r.opts.Now()
	c := &r.conflicts
	c.mu.Lock()
	notes, unfollowed := c.sweepLocked(now)
	k := conflictKey{uid, cred}
	w, ok := c.windows[k]
	recorded := true
	switch {
	case ok && now.Sub(w.start.Time()) < conflictWindowLen:
		w.more, w.last = w.more+1, from
		recorded = false
	case ok: // its window is over: this event names what it counted
		msg := conflictMessage(from, cred)
		if w.more > 0 {
			msg += fmt.Sprintf(" (and %d more refused since %s, not recorded one by one)", w.more, w.start.Time().Format(time.RFC3339))
		}
		*w = conflictWindow{start: stamp.Of(now)}
		notes = append(notes, conflictNote{uid, msg})
	case len(c.windows) >= maxConflictWindows:
		c.unfollowed++
		recorded = false
	default:
		if c.windows == nil {
			c.windows = map[conflictKey]*conflictWindow{}
		}
		c.windows[k] = &conflictWindow{start: stamp.Of(now)}
		notes = append(notes, conflictNote{uid, conflictMessage(from, cred)})
	}
	c.mu.Unlock()
	r.afterConflictSweep(now, notes, unfollowed)
	return recorded
}

func conflictMessage(from string, cred store.Credential) string {
	return fmt.Sprintf("refused a connection from %s presenting this instance UID with %s %q; "+
		"further ones with this credential within a minute are counted, not recorded one by one", from, cred.Kind, cred.ID)
}

// sweepConflicts writes the counts of the windows that are over (the
// registry's loop calls it).
func (r *Registry) sweepConflicts() {
	now := r.opts.Now()
	c := &r.conflicts
	c.mu.Lock()
	notes, unfollowed := c.sweepLocked(now)
	c.mu.Unlock()
	r.afterConflictSweep(now, notes, unfollowed)
}

// sweepLocked ends the windows that are over, at most once a minute: a
// window with refusals counted gives an event naming their count and
// starts again from it; one without ends. It also returns how many new
// pairs were not followed since the last sweep.
func (c *conflicts) sweepLocked(now time.Time) ([]conflictNote, int) {
	if now.Sub(c.lastSweep.Time()) < conflictWindowLen {
		return nil, 0
	}
	c.lastSweep = stamp.Of(now)
	var notes []conflictNote
	for k, w := range c.windows {
		if now.Sub(w.start.Time()) < conflictWindowLen {
			continue
		}
		if w.more == 0 {
			delete(c.windows, k)
			continue
		}
		notes = append(notes, conflictNote{k.uid, fmt.Sprintf("refused %d more connections presenting this instance UID with %s %q since %s, the last from %s",
			w.more, k.cred.Kind, k.cred.ID, w.start.Time().Format(time.RFC3339), w.last)})
		*w = conflictWindow{start: stamp.Of(now)}
	}
	unfollowed := c.unfollowed
	c.unfollowed = 0
	return notes, unfollowed
}

// afterConflictSweep adds the events of notes to their agents' histories
// (those forgotten meanwhile have none) and logs the pairs not followed.
func (r *Registry) afterConflictSweep(now time.Time, notes []conflictNote, unfollowed int) {
	if unfollowed > 0 {
		r.log.Warn("identity conflicts of too many instance UIDs and credentials at once: some were refused without an event in the agent's history",
			"refusals", unfollowed)
	}
	if len(notes) == 0 {
		return
	}
	uids := make([]uuid.UUID, 0, len(notes))
	r.mu.Lock()
	for _, n := range notes {
		if a, ok := r.agents[n.uid]; ok {
			r.addEventLocked(a, now, EventIdentityConflict, n.msg)
			uids = append(uids, n.uid)
		}
	}
	r.mu.Unlock()
	for _, uid := range uids {
		r.notifyWatchers(uid)
	}
}
