package configs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/offers"
	"github.com/myriarch/myriarch/server/rollout"
)

var _ offers.FleetPauser = (*Engine)(nil)

// PauseFleet implements offers.FleetPauser: an operator holds the fleet's
// configuration rollout (no wave moves on until a resume); false when the
// fleet has no configuration.
func (e *Engine) PauseFleet(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.fleets[name]
	if f == nil {
		return false
	}
	if f.Pause() {
		f.dirty = true
		e.log.Info("configuration rollout paused by an operator", "fleet", name)
		e.opts.Notice.Say(estate.EventRolloutPaused, name, "configuration rollout paused by an operator")
		e.saveFleets()
	}
	return true
}

// RetryFleet clears the failed configurations of every member of a fleet,
// as Retry does for one agent; it returns how many agents it retried.
func (e *Engine) RetryFleet(name string) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.fleets[name]
	if f == nil {
		return 0, fmt.Errorf("no fleet %q with a configuration", name)
	}
	work := map[uuid.UUID]struct{}{}
	for m := range f.waves.Members() {
		r := e.records[m]
		if r == nil || len(r.failed) == 0 {
			continue
		}
		r.own().failed, r.own().failedWhy = nil, ""
		if r.reported.Status == StatusFailed {
			r.sendAgain()
		}
		e.event(r, "config_retry", "failed configurations of fleet "+name+" cleared by an operator")
		e.dirty[m] = struct{}{}
		work[m] = struct{}{}
	}
	e.evaluate(work)
	e.kick()
	return len(work), nil
}

// SyncCounts counts the configured agents of every fleet by sync state,
// from the rollouts' wave counts (no walk over the agents).
func (e *Engine) SyncCounts() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := zeroSyncCounts()
	for _, f := range e.fleets {
		f.addSyncCounts(out)
	}
	return out
}

func zeroSyncCounts() map[string]int {
	return map[string]int{SyncInSync: 0, SyncPending: 0, SyncFailed: 0, SyncDrift: 0}
}

// addSyncCounts adds f's members to m by sync state. Caller holds e.mu.
func (f *fleetRollout) addSyncCounts(m map[string]int) {
	for w := range f.waves.Len() {
		for st, n := range f.waves.Counts(w) {
			if st == waveRolledBack {
				st = SyncDrift
			}
			m[st] += n
		}
	}
}

// operatorRoutes adds the fleet-wide retry of failed configurations and the
// configurations' part of GET /api/v1/summary.
func (e *Engine) operatorRoutes(api *admin.API) {
	api.FleetRetry(e.actions, "/api/v1/fleets/{name}/config/retry", OpRetryFleet, e.RetryFleet)
	api.AddSummary("configs", func() any { return e.SyncCounts() })
	api.AddSummary("configWarnings", func() any {
		byKind, collectors := e.WarningCounts()
		return map[string]any{"collectors": collectors, "byKind": byKind}
	})
}

// Gauges shows every configuration rollout, by fleet name.
func (e *Engine) Gauges() []rollout.Gauge {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]rollout.Gauge, 0, len(e.fleets))
	for _, f := range e.fleets {
		out = append(out, rollout.GaugeOf(f.def, f.State, f.waves, func(st string) bool { return st == SyncFailed || st == waveRolledBack }))
	}
	slices.SortFunc(out, func(a, b rollout.Gauge) int { return strings.Compare(a.Fleet, b.Fleet) })
	return out
}

// SyncCountsByFleet is SyncCounts per fleet.
func (e *Engine) SyncCountsByFleet() map[string]map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]map[string]int, len(e.fleets))
	for name, f := range e.fleets {
		m := zeroSyncCounts()
		f.addSyncCounts(m)
		out[name] = m
	}
	return out
}
