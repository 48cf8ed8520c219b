package registry

import (
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/store"
)

// An agent's identity (instance UID and credential) connected to two
// instances sharing a store at once: the agent reconnected to another
// instance before its old connection was seen closing, or a second
// process uses its identity. As on one instance, the newer connection is
// the agent's. Each instance writes into the agent's row when its newest
// connection of the agent opened (Report, flush), and a row keeps the
// newest connection written (store.Batch.Connected). An instance merging
// the row of an agent connected here (Merge) compares:
//
//   - the row names this instance: nothing to do;
//   - it names a connection to another instance that opened later (at the
//     same time: an instance whose name sorts after this one's): the
//     connections here are replaced. The row is merged as for an agent
//     connected to that instance, the connection layer is told to close
//     them (OnReplacedElsewhere), and once they have closed the agent
//     stays connected there;
//   - it names an older connection, or none: the row is written again to
//     name the connection here, and the other instance, reading it, finds
//     its own replaced in turn.
//
// Whatever the order the instances write and read in, the instance of the
// newest connection never closes it, and the others close theirs once they
// read a row naming it: two instances never close each other's in turn.
// Times are each instance's clock: instances whose clocks disagree by more
// than the time between two connections may keep the older one.

// ReplacedElsewhere says that an agent's connections to this instance are
// replaced by a newer one to another instance.
type ReplacedElsewhere struct {
	UID uuid.UUID
	// Opened is when the newest connection here opened (ReportResult.
	// Opened): it and the older ones are replaced, not one opened since.
	Opened time.Time
	// Instance is the instance the newer connection is open to.
	Instance string
}

// OnReplacedElsewhere registers fn, called outside the registry's lock
// each time an agent's connections here are replaced by a newer one to
// another instance: it is to close them. Call before traffic starts.
func (r *Registry) OnReplacedElsewhere(fn func(ReplacedElsewhere)) {
	r.mu.Lock()
	r.replacedHooks = append(r.replacedHooks, fn)
	r.mu.Unlock()
}

// ReplacedBy reports whether uid's connections here are replaced by a
// newer one to another instance and not all closed yet, and names that
// instance ("" when its connection has closed since). The connection layer
// asks it for a connection counted (Report) before it could be found to
// close.
func (r *Registry) ReplacedBy(uid uuid.UUID) (string, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.agents[uid]
	if !ok || a.conns == 0 || a.connectedHere(r.opts.Instance) {
		return "", false
	}
	return a.instanceName(), true
}

// contestLocked compares rec, the row of a, an agent connected here, with
// the connections here (see above): true when a newer connection to
// another instance replaces them; otherwise, when the row names another
// instance's connection or none, it is to be written again. Caller holds
// r.mu.
func (r *Registry) contestLocked(a *agent, rec *store.Agent) (ReplacedElsewhere, bool) {
	self := r.opts.Instance
	if self == "" || rec.Instance == self {
		return ReplacedElsewhere{}, false
	}
	opened := a.leftAt.Time()
	if rec.Instance != "" && newerConnection(rec.ConnectedAt, rec.Instance, opened, self) {
		return ReplacedElsewhere{UID: a.uid, Opened: opened, Instance: rec.Instance}, true
	}
	r.pendingConns[a.uid] = true
	return ReplacedElsewhere{}, false
}

// newerConnection reports whether the connection that opened at t1 to
// instance i1 is newer than the one that opened at t2 to i2: it opened
// later, or at the same time and i1 sorts after i2 (as the stores order
// them).
func newerConnection(t1 time.Time, i1 string, t2 time.Time, i2 string) bool {
	return t1.After(t2) || (t1.Equal(t2) && i1 > i2)
}

// tellReplaced calls the OnReplacedElsewhere functions for each of reps.
func (r *Registry) tellReplaced(reps []ReplacedElsewhere) {
	if len(reps) == 0 {
		return
	}
	r.mu.RLock()
	hooks := r.replacedHooks
	r.mu.RUnlock()
	for _, rep := range reps {
		for _, fn := range hooks {
			fn(rep)
		}
	}
}
