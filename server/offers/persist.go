package offers

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/stamp"
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
	// What the other instances sharing the store show and deliver.
	Target   string    `json:"targetVersion,omitempty"`
	Assign   string    `json:"assignmentError,omitempty"`
	Wave     int       `json:"wave,omitempty"`
	To       string    `json:"updater,omitempty"` // the updater the offer went to
	Mode     string    `json:"mode,omitempty"`
	OS       string    `json:"os,omitempty"`
	Arch     string    `json:"arch,omitempty"`
	Progress *Progress `json:"progress,omitempty"`
	// ReportAt is when the last package status applied was received.
	ReportAt time.Time `json:"reportAt,omitzero"`
}

func (c *collector) persisted() persisted {
	p := persisted{State: c.state, Error: c.err, Updated: c.updated.Time(), Package: c.pkg, Version: c.offerVer,
		HashHex: hex.EncodeToString([]byte(c.hash)), FleetKey: c.fleet, Target: c.target, Assign: c.assign, Wave: int(c.wave),
		Mode: c.offer.mode, OS: c.offer.os, Arch: c.offer.arch, Progress: c.progress, ReportAt: c.reportAt.Time()}
	if c.to != uuid.Nil {
		p.To = c.to.String()
	}
	for h := range c.failed {
		p.Failed = append(p.Failed, h)
	}
	slices.Sort(p.Failed)
	return p
}

// restoreLocked sets what p kept of c, sharing its strings and offer with
// the other records (a fleet's collectors hold the same few: states,
// versions, the offer). Caller holds e.mu.
func (e *Engine) restoreLocked(c *collector, p *persisted) {
	for _, s := range []*string{&p.State, &p.Error, &p.FleetKey, &p.Target, &p.Assign} {
		*s = e.strs.String(*s)
	}
	var spec *offerSpec
	if c.pkg == p.Package && c.offerVer == p.Version && hex.EncodeToString([]byte(c.hash)) == p.HashHex &&
		c.offer == (offerKey{mode: p.Mode, os: p.OS, arch: p.Arch}) {
		spec = c.offerSpec // the same offer: keep the content hash it has
	} else {
		spec = e.specLocked(p.Package, p.Version, unhex(p.HashHex), nil, offerKey{mode: p.Mode, os: p.OS, arch: p.Arch})
	}
	c.restore(p, spec)
}

// restore sets what p kept, with spec its offer. The decision's inputs
// (fleet, target, wave…) are computed again by a leader; a follower shows
// them as they are.
func (c *collector) restore(p *persisted, spec *offerSpec) {
	c.state, c.updated = p.State, stamp.Of(p.Updated)
	c.fleet, c.target, c.wave = p.FleetKey, p.Target, int32(p.Wave)
	c.reportAt = stamp.Of(p.ReportAt)
	to, _ := uuid.Parse(p.To)
	c.setErr(p.Error)
	c.setAssign(p.Assign)
	c.setProgress(p.Progress)
	c.setOffer(spec, to)
	if len(p.Failed) > 0 || c.failed != nil {
		var failed map[string]bool
		if len(p.Failed) > 0 {
			failed = make(map[string]bool, len(p.Failed))
		}
		for _, h := range p.Failed {
			failed[h] = true
		}
		c.own().failed = failed
	}
	c.shed()
}

// decided is what a collector's record holds besides its state, error and
// failed hashes (which change only with an event of their own).
type decided struct {
	fleet, target, assign string
	wave                  int
	hash                  string
	offer                 offerKey
	to                    uuid.UUID
}

func (c *collector) decision() decided {
	return decided{fleet: c.fleet, target: c.target, assign: c.assign, wave: int(c.wave), hash: c.hash, offer: c.offer, to: c.to}
}

func (c *collector) decisionIs(d decided) bool {
	return c.fleet == d.fleet && c.target == d.target && c.assign == d.assign && int(c.wave) == d.wave &&
		c.hash == d.hash && c.offer == d.offer && c.to == d.to
}

// persistLocked queues c's record for the writer when this instance decides;
// caller holds e.mu.
func (e *Engine) persistLocked(c *collector) {
	if e.records == nil || !e.role.Leads() {
		return
	}
	e.dirty[c.uid] = struct{}{}
	if e.writes != nil { // nil while New evaluates: it flushes before it returns
		e.writes.Request()
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
	err := e.records.WriteOffers(context.Background(), batch)
	if errors.Is(err, store.ErrNotLeader) {
		// The leader that took over decides again from what it finds.
		e.log.Info("offer decisions not written: this instance no longer leads", "collectors", len(batch))
		return
	}
	if err != nil {
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
