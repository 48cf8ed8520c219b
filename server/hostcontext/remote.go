package hostcontext

import (
	"slices"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/registry"
)

// AgentChanged is a registry observer for instances sharing a store: an
// updater connected to another instance sends its snapshots there, which
// keeps them with the updater's record; when that record reaches this
// instance, its snapshot is taken as if received here, so collectors
// connected here render with it. Updaters connected here are left alone
// (this Book is the source of their record).
func (b *Book) AgentChanged(uid uuid.UUID) {
	a, ok := b.reg.Peek(uid)
	if !ok || a.Kind != registry.KindUpdater || a.Connected || len(a.Extra) == 0 {
		return
	}
	s, err := decodeStored(a.Extra)
	if err != nil {
		return
	}
	b.mu.Lock()
	if b.closed || b.snaps[uid].Equal(s) {
		b.mu.Unlock()
		return
	}
	b.snaps[uid] = s
	fns := slices.Clone(b.changed)
	b.mu.Unlock()
	b.tell(fns, uid)
}
