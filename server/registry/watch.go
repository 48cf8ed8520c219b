package registry

import (
	"maps"

	"github.com/google/uuid"
)

// Watch registers fn to be told that something an operator sees of an agent
// may have changed: what observers hear (registration, connection,
// description, kind, labels) and also a new history event or new feature
// data (SetExtra). fn runs synchronously, outside the registry's lock but
// possibly under a feature's own lock (SetExtra and AddEvent are called by
// features holding theirs), so it must return quickly and must not call back
// into a feature. Call before traffic starts.
func (r *Registry) Watch(fn Observer) {
	r.mu.Lock()
	r.watchers = append(r.watchers, fn)
	r.mu.Unlock()
}

// notifyWatchers tells the watchers about uid; caller must not hold r.mu.
func (r *Registry) notifyWatchers(uid uuid.UUID) {
	r.mu.RLock()
	ws := r.watchers
	r.mu.RUnlock()
	for _, fn := range ws {
		fn(uid)
	}
}

// Label sources: where a server label of an agent comes from, lowest
// precedence first (inventory wins over token labels).
const (
	LabelFromToken          = "token"
	LabelFromInventoryToken = "inventory (token)"
	LabelFromInventoryUID   = "inventory (instance UID)"
)

// LabelSources returns, for each label of uid, where its value comes from;
// false if the agent is unknown.
func (r *Registry) LabelSources(uid uuid.UUID) (map[string]string, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.agents[uid]
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(a.labels))
	for k := range a.tokenLabels {
		out[k] = LabelFromToken
	}
	if a.cred.Kind == "token" && r.tokens != nil {
		for k := range r.inventory.ByToken[r.tokens.TokenName(a.cred.ID)] {
			out[k] = LabelFromInventoryToken
		}
	}
	for k := range r.inventory.ByUID[a.uid] {
		out[k] = LabelFromInventoryUID
	}
	maps.DeleteFunc(out, func(k, _ string) bool { _, ok := a.labels[k]; return !ok })
	return out, true
}
