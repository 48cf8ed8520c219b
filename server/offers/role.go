package offers

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/server/store"
)

// ReportFeature names the package statuses an updater reports, as the
// store keeps them (store.Report.Feature).
const ReportFeature = "packages"

// Leading reports whether this instance decides.
func (e *Engine) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.role.Leads()
}

// Lead makes this instance decide, from the records and rollout states the
// store holds (the last leader's): every collector is evaluated again.
// Offers in flight keep their hash, so none is made twice.
func (e *Engine) Lead(ctx context.Context) error {
	stored, err := e.loadRecords(ctx)
	if err != nil {
		return err
	}
	states, err := e.rollouts.List(ctx)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.applyFleetStatesLocked(states)
	for uid, data := range stored {
		c := e.collectors[uid]
		if c == nil {
			continue
		}
		var p persisted
		if json.Unmarshal(data, &p) == nil {
			e.restoreLocked(c, &p)
		}
	}
	e.role.Lead()
	clear(e.offeredTo)
	clear(e.desired)
	for _, c := range e.collectors {
		c.countFl = ""
	}
	e.reevaluateAllLocked()
	dirty := e.dirtyFleetsLocked()
	e.mu.Unlock()
	e.saveFleets(dirty)
	e.writes.Flush()
	return nil
}

// Follow makes this instance stop deciding: the offer records it decided
// and has not written are dropped (the next leader decides again from the
// store), and it keeps delivering its last offers until the leader's
// records come.
func (e *Engine) Follow() { e.role.StepDown(&e.mu, e.dropDecisionsLocked) }

// dropDecisionsLocked drops what this instance decided and has not
// written, keeping its last rollout states and offers to show and deliver.
// Caller holds e.mu.
func (e *Engine) dropDecisionsLocked() {
	clear(e.dirty)
	// What this instance decided last stands for the store until the
	// next leader writes.
	e.stored = map[string][]byte{}
	for name, f := range e.fleets {
		if b, err := json.Marshal(f.rolloutState); err == nil {
			e.stored[name] = b
		}
	}
	clear(e.offeredTo)
	for _, c := range e.collectors {
		if c.to != uuid.Nil {
			e.offeredTo[c.to] = c.uid
		}
	}
}

// Mirror takes the leader's records of collectors: shown as they are, and
// their offers delivered to the updaters connected here (sent at once when
// newly made). Ignored while this instance leads.
func (e *Engine) Mirror(records map[[16]byte][]byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.role.Leads() {
		return
	}
	for uid, data := range records {
		var p persisted
		if err := json.Unmarshal(data, &p); err != nil {
			e.log.Warn("the leader's offer record is unreadable", "collector", uuid.UUID(uid), "err", err)
			continue
		}
		c := e.collectorRecLocked(uid)
		prevTo, prevState, prevHash := c.to, c.state, c.hash
		e.restoreLocked(c, &p)
		e.countLocked(c)
		if prevTo != c.to && prevTo != uuid.Nil && e.offeredTo[prevTo] == c.uid {
			delete(e.offeredTo, prevTo)
			e.deliverToLocked(prevTo, false)
		}
		if c.to == uuid.Nil {
			continue
		}
		e.offeredTo[c.to] = c.uid
		fresh := c.state == Offered && (prevState != Offered || prevHash != c.hash || prevTo != c.to)
		e.deliverToLocked(c.to, fresh)
	}
}

// deliverToLocked sets the package set an updater connected here should hold
// from the leader's record of the collector offered to it, pushing it when
// send. A record whose offer this instance builds differently (another
// estate) is not delivered. Caller holds e.mu; following only.
func (e *Engine) deliverToLocked(upd uuid.UUID, send bool) {
	delete(e.desired, upd)
	c := e.collectors[e.offeredTo[upd]]
	if c == nil || c.to != upd || e.est == nil {
		return
	}
	switch c.state {
	case Offered, Downloading, Installing, Installed:
	default:
		return
	}
	pv := e.catalogLocked(c.pkg, c.offerVer)
	if pv == nil {
		return
	}
	pas, hash, _ := e.offerOnLocked(pv, c.offer)
	if pas == nil || string(hash) != c.hash {
		e.log.Warn("the leader's offer differs from this instance's estate; not delivered", "collector", c.uid, "updater", upd,
			"package", c.pkg, "version", c.offerVer)
		return
	}
	e.desired[upd] = pas
	if send {
		if a, ok := e.reg.Peek(upd); ok && a.Connected {
			e.outbox.Push(upd, pas)
		}
	}
}

// recountAllLocked puts every collector in its fleet's wave counts as it is
// (following: the leader decided the states). Caller holds e.mu.
func (e *Engine) recountAllLocked() {
	for _, c := range e.collectors {
		c.countFl = ""
		e.countLocked(c)
	}
}

// ApplyReports applies updaters' package statuses that other instances
// received (leading only); each is applied once, a report not newer than
// the last applied for its collector being left out.
func (e *Engine) ApplyReports(reps []store.Report) {
	var dirty map[string]*rolloutState
	e.mu.Lock()
	if !e.role.Leads() {
		e.mu.Unlock()
		return
	}
	for _, r := range reps {
		if r.Feature != ReportFeature {
			continue
		}
		var ps protobufs.PackageStatuses
		if err := proto.Unmarshal(r.Data, &ps); err != nil {
			e.log.Warn("unreadable package statuses reported", "updater", uuid.UUID(r.UID), "err", err)
			continue
		}
		if _, isUpdater := e.updaters[r.UID]; isUpdater {
			for name, f := range e.packageStatusesLocked(r.UID, &ps, r.At) {
				if dirty == nil {
					dirty = map[string]*rolloutState{}
				}
				dirty[name] = f
			}
		}
	}
	e.mu.Unlock()
	e.saveFleets(dirty)
}

// ReloadState reads the fleets' rollout states the leader wrote (following
// only: a leader writes them).
func (e *Engine) ReloadState(ctx context.Context) error {
	states, err := e.rollouts.List(ctx)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.role.Leads() {
		e.stored = states
		e.applyFleetStatesLocked(states)
	}
	return nil
}

// Flush writes the records decided so far now (once a write in progress
// is done).
func (e *Engine) Flush() { e.writes.Flush() }

// reportLocked queues an updater's package statuses for the leader. Caller
// holds e.mu.
func (e *Engine) reportLocked(uid uuid.UUID, ps *protobufs.PackageStatuses, at time.Time) {
	if !e.opts.Shared {
		return
	}
	data, err := proto.Marshal(ps)
	if err != nil {
		return
	}
	e.reg.SetReport(uid, ReportFeature, at, data)
}
