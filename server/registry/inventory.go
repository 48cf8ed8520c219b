package registry

import (
	"maps"

	"github.com/google/uuid"
)

// Inventory holds server labels from the estate's inventory files. Labels by
// instance UID win over labels by token name, which win over token labels.
type Inventory struct {
	ByUID   map[uuid.UUID]map[string]string
	ByToken map[string]map[string]string
}

// SetInventory replaces the inventory and recomputes the labels and view of
// the agents whose inventory entries changed; only those are notified, so
// reloading an estate whose inventory did not change costs no agent work.
func (r *Registry) SetInventory(inv Inventory) {
	r.mu.Lock()
	old := r.inventory
	r.inventory = inv
	changedUIDs := map[uuid.UUID]bool{}
	for uid, l := range inv.ByUID {
		if ol, ok := old.ByUID[uid]; !ok || !maps.Equal(l, ol) {
			changedUIDs[uid] = true
		}
	}
	for uid := range old.ByUID {
		if _, ok := inv.ByUID[uid]; !ok {
			changedUIDs[uid] = true
		}
	}
	changedTokens := map[string]bool{}
	for name, l := range inv.ByToken {
		if ol, ok := old.ByToken[name]; !ok || !maps.Equal(l, ol) {
			changedTokens[name] = true
		}
	}
	for name := range old.ByToken {
		if _, ok := inv.ByToken[name]; !ok {
			changedTokens[name] = true
		}
	}
	var uids []uuid.UUID
	if len(changedUIDs) > 0 || len(changedTokens) > 0 {
		for _, a := range r.agents {
			if changedUIDs[a.uid] || (len(changedTokens) > 0 && a.cred.Kind == "token" && r.tokens != nil &&
				changedTokens[r.tokens.TokenName(a.cred.ID)]) {
				r.relabelLocked(a, nil)
				uids = append(uids, a.uid)
			}
		}
	}
	r.mu.Unlock()
	r.notify(uids...)
}

// tokenLabelsOf copies a token's labels for a new registration.
func (r *Registry) tokenLabelsOf(id string) map[string]string {
	if r.tokens == nil {
		return map[string]string{}
	}
	l := r.tokens.TokenLabels(id)
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return r.labelSets.share(out)
}
