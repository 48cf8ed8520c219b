package configs

import (
	"github.com/google/uuid"
)

// Merge takes assignment records that another myriarchd instance sharing
// the store wrote (its agents' reported statuses, failed hashes, desired
// and applied hashes), for agents not connected here: this instance's own
// record of an agent connected here is the newer one. Merged agents are
// evaluated again (wave counts); what that changes for an agent connected
// elsewhere is not written (see cluster.Publishing).
// It returns the hashes the merged records name that this instance has no
// body for, to be added with AddBodies.
func (e *Engine) Merge(assignments map[[16]byte][]byte) (missing []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	work := map[uuid.UUID]struct{}{}
	for uid, data := range assignments {
		r := e.records[uid]
		if r != nil && r.connected {
			continue
		}
		var p persisted
		if err := p.unmarshal(data, e.strs.Bytes); err != nil {
			e.log.Warn("another instance's configuration assignment is unreadable", "agent", uuid.UUID(uid), "err", err)
			continue
		}
		if r == nil {
			r = &record{uid: uid}
			e.records[uid] = r
		}
		r.restore(p)
		r.sentHash = ""
		work[uid] = struct{}{}
		for _, h := range append([]string{r.assigned, r.desired, r.applied}, r.failed...) {
			if _, ok := e.bodies[h]; h != "" && !ok {
				missing = append(missing, h)
			}
		}
	}
	e.evaluate(work)
	e.kick()
	return missing
}

// AddBodies adds configuration bodies another instance stored.
func (e *Engine) AddBodies(bodies map[string][]byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for h, b := range bodies {
		if _, ok := e.bodies[h]; !ok {
			e.bodies[h] = b
		}
	}
}
