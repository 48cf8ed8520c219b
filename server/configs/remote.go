package configs

import (
	"github.com/google/uuid"
)

// Merge takes the leading instance's assignment records (following only):
// shown as they are, and their desired configurations sent to the agents
// connected here. Of an agent connected here, what it reported to this
// instance is kept (it is newer than what the leader has applied). It
// returns the hashes the merged records name that this instance has no
// body for, to be added with AddBodies.
func (e *Engine) Merge(assignments map[[16]byte][]byte) (missing []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.role.Leads() {
		return nil
	}
	for uid, data := range assignments {
		var p persisted
		if err := p.unmarshal(data, e.strs.Bytes); err != nil {
			e.log.Warn("the leader's configuration assignment is unreadable", "agent", uuid.UUID(uid), "err", err)
			continue
		}
		r := e.records[uid]
		if r == nil {
			r = newRecord(uid)
			e.records[uid] = r
		}
		prevDesired := r.desired
		if r.connected {
			r.restoreDecided(p)
		} else {
			r.restore(p)
		}
		e.settleFailing(r)
		if !r.connected || r.desired != prevDesired {
			r.sendAgain()
		}
		e.count(r)
		e.pushIfDue(r)
		r.shed()
		for _, h := range append([]string{r.assigned, r.desired, r.applied}, r.failed...) {
			if _, ok := e.bodies[h]; h != "" && !ok {
				missing = append(missing, h)
			}
		}
	}
	return missing
}

// settleFailing keeps a hash the agent reported failing here until the
// leader's record shows what it made of it: recorded failed (then an
// operator's retry clearing it lets it be sent again), or no longer
// desired. Caller holds e.mu.
func (e *Engine) settleFailing(r *record) {
	switch {
	case r.failing == "":
	case r.isFailed(r.failing):
		r.own().failingSeen = true
	case r.failingSeen || r.desired != r.failing:
		r.clearFailing()
		r.sendAgain()
	}
}

// AddBodies adds configuration bodies another instance stored; agents
// connected here that waited for one are sent it.
func (e *Engine) AddBodies(bodies map[string][]byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	added := false
	for h, b := range bodies {
		if _, ok := e.bodies[h]; !ok {
			e.bodies[h] = b
			added = true
		}
	}
	if !added {
		return
	}
	for _, r := range e.records {
		if _, ok := bodies[r.desired]; ok {
			e.pushIfDue(r)
		}
	}
}
