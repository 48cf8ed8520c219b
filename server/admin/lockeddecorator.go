package admin

import (
	"sync"

	"github.com/myriarch/myriarch/server/registry"
)

// LockedDecorator is a BatchDecorator made of a feature's function that
// needs the feature's lock held: one acquisition for an agent, or for a
// listing's chunk.
type LockedDecorator struct {
	Mu     sync.Locker
	Locked func(a *registry.Agent, j *Agent) // called with Mu held
}

var _ BatchDecorator = LockedDecorator{}

// Decorate implements Decorator.
func (d LockedDecorator) Decorate(a *registry.Agent, j *Agent) {
	d.Mu.Lock()
	defer d.Mu.Unlock()
	d.Locked(a, j)
}

// DecorateBatch implements BatchDecorator.
func (d LockedDecorator) DecorateBatch(as []registry.Agent, js []*Agent) {
	d.Mu.Lock()
	defer d.Mu.Unlock()
	for i := range as {
		d.Locked(&as[i], js[i])
	}
}
