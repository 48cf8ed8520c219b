package configs

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/stamp"
	"github.com/myriarch/myriarch/server/rollout"
	"github.com/myriarch/myriarch/server/store"
)

// What instances sharing a store pass on: ReportFeature names what an
// agent reports about its remote configuration, as the store keeps it
// (store.Report.Feature); the Ops are the retries an operator asks for,
// with their arguments, which the leading instance performs (see
// Options.Requests).
const (
	ReportFeature = "config"
	OpRetry       = "configs.retry"      // agent UID
	OpRetryFleet  = "configs.retryFleet" // fleet name; result: how many
)

// observed is what the instance an agent is connected to learnt from it,
// for the leader: its remote config status, its effective configuration
// (and what it lacks of the desired one), and a desired configuration it
// has been stuck applying while unhealthy.
type observed struct {
	Reported    reported `json:"reported"`
	Effective   string   `json:"effective,omitempty"`
	EffectiveOf string   `json:"effectiveOf,omitempty"`
	Missing     []string `json:"missing,omitempty"`
	Stuck       string   `json:"stuck,omitempty"`
	StuckWhy    string   `json:"stuckWhy,omitempty"`
}

func (o observed) equal(p observed) bool {
	return o.Reported == p.Reported && o.Effective == p.Effective && o.EffectiveOf == p.EffectiveOf &&
		slices.Equal(o.Missing, p.Missing) && o.Stuck == p.Stuck && o.StuckWhy == p.StuckWhy
}

// Leading reports whether this instance decides.
func (e *Engine) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.role.Leads()
}

// Lead makes this instance decide, from the records, bodies and rollout
// states the store holds (the last leader's); every configurable agent is
// evaluated again, and what agents connected here reported is applied.
func (e *Engine) Lead(ctx context.Context) error {
	assignments, bodies, err := e.st.LoadConfigs(ctx)
	if err != nil {
		return err
	}
	stored, err := e.loadFleetStates(ctx)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for h, b := range bodies {
		e.bodies[h] = b
	}
	local := map[*record]observed{}
	for uid, data := range assignments {
		var p persisted
		if err := p.unmarshal(data, e.strs.Bytes); err != nil {
			continue
		}
		r := e.records[uid]
		if r == nil {
			r = newRecord(uid)
			e.records[uid] = r
		}
		if r.connected {
			local[r] = r.lastObserved()
		}
		r.restore(p)
	}
	e.role.Lead()
	e.fleets = map[string]*fleetRollout{} // the leader's states, not those shown until now
	e.setEstateLocked(e.est, stored, nil)
	for r, o := range local {
		e.applyObserved(r, o)
	}
	for _, r := range e.records {
		r.clearFailing()
		r.shed()
	}
	e.saveFleets()
	e.kick()
	return nil
}

// Follow makes this instance stop deciding: the assignments and bodies it
// decided and has not written are dropped (the next leader decides again
// from the store).
func (e *Engine) Follow() { e.role.StepDown(&e.mu, e.dropDecisions) }

// dropDecisions drops the assignments and bodies this instance decided
// and has not written, keeping its last rollout states to show. Caller
// holds e.mu.
func (e *Engine) dropDecisions() {
	e.dirty, e.newBodies, e.gone = map[uuid.UUID]struct{}{}, map[string][]byte{}, nil
	// What this instance decided last stands for the store until the
	// next leader writes.
	e.stored = map[string]rolloutState{}
	for name, f := range e.fleets {
		e.stored[name] = f.rolloutState
	}
}

// followFleets rebuilds the fleets of the estate in force to show the
// leader's records in them, keeping the rollout states known (those of
// fleets new here as last read from the store). Caller holds e.mu;
// following only.
func (e *Engine) followFleets() {
	old := e.fleets
	e.fleets = map[string]*fleetRollout{}
	if e.est != nil {
		for _, def := range e.est.Fleets {
			if def.Config == nil {
				continue
			}
			f := newFleetRollout(def)
			if prev, ok := old[def.Name]; ok {
				f.rolloutState = prev.rolloutState
			} else {
				f.rolloutState = e.stored[def.Name]
			}
			e.fleets[def.Name] = f
		}
	}
	for _, r := range e.records {
		r.countedIn = ""
		e.count(r)
	}
}

// loadFleetStates reads the fleets' rollout states.
func (e *Engine) loadFleetStates(ctx context.Context) (map[string]rolloutState, error) {
	states, err := e.rollouts.List(ctx)
	if err != nil {
		return nil, err
	}
	return rollout.Decode[rolloutState](states), nil
}

// ReloadState reads the fleets' rollout states the leader wrote (following
// only: a leader writes them).
func (e *Engine) ReloadState(ctx context.Context) error {
	stored, err := e.loadFleetStates(ctx)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.role.Leads() {
		return nil
	}
	e.stored = stored
	for name, f := range e.fleets {
		if rs, ok := stored[name]; ok {
			f.rolloutState = rs
		}
	}
	return nil
}

// ApplyReports acts on what agents connected to other instances reported
// (leading only); each report is applied once, one not newer than the last
// applied for its agent being left out.
func (e *Engine) ApplyReports(reps []store.Report) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.role.Leads() {
		return
	}
	for _, rep := range reps {
		if rep.Feature != ReportFeature {
			continue
		}
		r := e.records[rep.UID]
		if r == nil || !r.view.Known() || !rep.At.After(r.reportAt.Time()) {
			continue
		}
		var o observed
		if err := json.Unmarshal(rep.Data, &o); err != nil {
			e.log.Warn("unreadable configuration report", "agent", uuid.UUID(rep.UID), "err", err)
			continue
		}
		r.reportAt = stamp.Of(rep.At)
		e.dirty[r.uid] = struct{}{}
		e.applyObserved(r, o)
	}
	e.saveFleets()
	e.kick()
}

// applyObserved applies what another instance observed of an agent, as
// OnAgentMessage does what it observes itself. Caller holds e.mu; leading.
func (e *Engine) applyObserved(r *record, o observed) {
	if o.Reported != (reported{}) {
		e.remoteConfigStatus(r, o.Reported)
	}
	if o.Effective != r.effective {
		r.effective = o.Effective
	}
	if o.EffectiveOf != "" && o.EffectiveOf == r.desired {
		tr := r.track()
		tr.effectiveOf, tr.effectiveMissing = o.EffectiveOf, o.Missing
	}
	e.checkEffective(r)
	r.untrack()
	if o.Stuck != "" && o.Stuck == r.desired && !r.isFailed(o.Stuck) {
		e.failed(r, o.Stuck, o.StuckWhy)
		e.reevaluate(r)
	}
}

// report queues what this instance observed of an agent connected to it
// for the leader (and for the next one), when it changed. Caller holds
// e.mu.
func (e *Engine) report(r *record) {
	if !e.opts.Shared {
		return
	}
	o := observed{Reported: r.reported, Effective: r.effective}
	if tr := r.tracking(); tr.effectiveOf != "" {
		o.EffectiveOf, o.Missing = tr.effectiveOf, tr.effectiveMissing
	}
	if r.failing != "" && r.failing == r.desired && r.stuckWhy != "" {
		o.Stuck, o.StuckWhy = r.failing, r.stuckWhy
	}
	if o.equal(r.lastObserved()) {
		return
	}
	data, err := json.Marshal(o)
	if err != nil {
		return
	}
	r.observed = &o
	at := e.opts.Now().UTC()
	if !at.After(r.reportAt.Time()) {
		at = r.reportAt.Time().Add(time.Nanosecond)
	}
	r.reportAt = stamp.Of(at)
	if e.role.Leads() {
		e.dirty[r.uid] = struct{}{}
	}
	e.reg.SetReport(r.uid, ReportFeature, at, data)
}

// Flush writes the records decided so far now (once a write in progress
// is done).
func (e *Engine) Flush() { e.writes.Flush() }
