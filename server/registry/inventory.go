package registry

import (
	"github.com/google/uuid"
)

// Inventory holds server labels from the estate's inventory files. Labels by
// instance UID win over labels by token name, which win over token labels.
type Inventory struct {
	ByUID   map[uuid.UUID]map[string]string
	ByToken map[string]map[string]string
}

// SetInventory replaces the inventory and recomputes every agent's labels and view.
func (r *Registry) SetInventory(inv Inventory) {
	r.mu.Lock()
	r.inventory = inv
	uids := make([]uuid.UUID, 0, len(r.agents))
	for _, a := range r.agents {
		r.relabel(a)
		uids = append(uids, a.uid)
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
	return out
}
