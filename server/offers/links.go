package offers

import (
	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/pairing"
)

// LinkedUpdater returns the updater linked to a collector; false when it
// has none or the link is ambiguous.
func (e *Engine) LinkedUpdater(collector uuid.UUID) (uuid.UUID, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.ix.Collector(collector)
	if !ok || s.State != pairing.Linked {
		return uuid.Nil, false
	}
	return s.Updater, true
}

// LinkedCollector returns the collector an updater is linked to; false
// when it is not (or its claim is ambiguous).
func (e *Engine) LinkedCollector(updater uuid.UUID) (uuid.UUID, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.ix.Updater(updater)
	if !ok || s.State != pairing.Linked || s.Collector == uuid.Nil {
		return uuid.Nil, false
	}
	return s.Collector, true
}

// OnLinkChange registers fn to be told of every collector whose pairing
// changed. fn is called with the engine's lock held: it must not block or
// call back into the engine. Call before traffic starts.
func (e *Engine) OnLinkChange(fn func(collector uuid.UUID)) {
	e.mu.Lock()
	e.linkObservers = append(e.linkObservers, fn)
	e.mu.Unlock()
}
