package offers

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/store"
)

// persisted is what the engine keeps of a collector across restarts (and,
// with instances sharing a store, what the leading instance tells the
// others): the offer's state and what it decided it from.
type persisted struct {
	Failed   []string  `json:"failed,omitempty"`
	State    string    `json:"state,omitempty"`
	Error    string    `json:"error,omitempty"`
	Updated  time.Time `json:"updatedAt"`
	Package  string    `json:"package,omitempty"`
	Version  string    `json:"version,omitempty"`
	HashHex  string    `json:"hash,omitempty"`
	FleetKey string    `json:"fleet,omitempty"`
}

func (c *collector) persisted() persisted {
	p := persisted{State: c.state, Error: c.err, Updated: c.updated, Package: c.pkg, Version: c.offerVer,
		HashHex: hex.EncodeToString(c.hash), FleetKey: c.fleet}
	for h := range c.failed {
		p.Failed = append(p.Failed, h)
	}
	slices.Sort(p.Failed)
	return p
}

// restore sets what p kept.
func (c *collector) restore(p *persisted) {
	c.state, c.err, c.updated, c.pkg, c.offerVer = p.State, p.Error, p.Updated, p.Package, p.Version
	c.failed = make(map[string]bool, len(p.Failed))
	for _, h := range p.Failed {
		c.failed[h] = true
	}
	c.hash = unhex(p.HashHex)
}

// persist queues c's record for the writer; caller holds e.mu.
func (e *Engine) persist(c *collector) {
	if e.records == nil {
		return
	}
	e.dirty[c.uid] = struct{}{}
	select {
	case e.flushReq <- struct{}{}:
	default:
	}
}

// writer writes queued records every flushEvery, or sooner when asked,
// until Close.
func (e *Engine) writer() {
	defer e.wg.Done()
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
		case <-e.flushReq:
		}
		e.flush()
	}
}

// flushEvery bounds how long a changed record waits to be written.
const flushEvery = 250 * time.Millisecond

// flush writes the queued records in one batch; on failure they stay
// queued for the next one.
func (e *Engine) flush() {
	if e.records == nil {
		return
	}
	e.mu.Lock()
	if len(e.dirty) == 0 {
		e.mu.Unlock()
		return
	}
	batch := make(map[[16]byte][]byte, len(e.dirty))
	for uid := range e.dirty {
		if c := e.collectors[uid]; c != nil {
			batch[uid], _ = json.Marshal(c.persisted())
		}
	}
	dirty := e.dirty
	e.dirty = map[uuid.UUID]struct{}{}
	e.mu.Unlock()
	if err := e.records.WriteOffers(context.Background(), batch); err != nil {
		e.log.Error("persisting offers failed; retrying", "collectors", len(batch), "err", err)
		e.mu.Lock()
		for uid := range dirty {
			e.dirty[uid] = struct{}{}
		}
		e.mu.Unlock()
	}
}

// loadRecords reads the stored records (none without a records store).
func (e *Engine) loadRecords(ctx context.Context) (map[[16]byte][]byte, error) {
	if e.records == nil {
		return nil, nil
	}
	recs, err := e.records.LoadOffers(ctx)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return recs, nil
}
