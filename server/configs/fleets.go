package configs

import (
	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/offers"
)

// RolloutJSON is a fleet's configuration rollout, the "config" of its
// entry in GET /api/v1/fleets.
type RolloutJSON struct {
	Blueprint   string     `json:"blueprint"`
	Bridges     bool       `json:"bridges"`
	State       string     `json:"state"` // running | paused | complete
	Failures    int        `json:"failures"`
	MaxFailures *int       `json:"maxFailures"`
	Waves       []WaveJSON `json:"waves"`
	// PausedBy says why a paused rollout is paused: operator or failures.
	PausedBy string `json:"pausedBy,omitempty"`
}

// WaveJSON counts a wave's collectors by sync state; States also counts
// those rolled back from a failed configuration ("rolled_back", drift to
// their sync state), and Failed both the failed and the rolled back.
type WaveJSON struct {
	Wave   string         `json:"wave"`
	Total  int            `json:"total"`
	Open   bool           `json:"open"`
	InSync int            `json:"inSync"`
	Failed int            `json:"failed"`
	States map[string]int `json:"states"`
}

var _ offers.FleetExtension = (*Engine)(nil)

// FleetJSON implements offers.FleetExtension.
func (e *Engine) FleetJSON(name string) any {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.fleets[name]
	if f == nil {
		return nil
	}
	out := RolloutJSON{Blueprint: f.def.Config.Blueprint, Bridges: f.def.Config.Bridges, Failures: f.Failures, Waves: []WaveJSON{}}
	if mf, ok := f.maxFailures(); ok {
		out.MaxFailures = &mf
	}
	for w := range f.waves.Len() {
		name := "all"
		if r := f.def.Rollout; r != nil {
			name = "(no wave)"
			if w < len(r.Waves) {
				name = r.Waves[w]
			}
		}
		states := map[string]int{}
		for k, v := range f.waves.Counts(w) {
			states[k] = v
		}
		out.Waves = append(out.Waves, WaveJSON{Wave: name, Total: f.waves.Total(w), Open: f.waves.GateOpen(w),
			InSync: states[SyncInSync], Failed: states[SyncFailed] + states[waveRolledBack], States: states})
	}
	switch {
	case f.Paused:
		out.State, out.PausedBy = "paused", "failures"
		if f.Manual {
			out.PausedBy = "operator"
		}
	case f.waves.Complete():
		out.State = "complete"
	default:
		out.State = "running"
	}
	return out
}

// ResumeFleet implements offers.FleetExtension: the rollout continues and
// failures count anew from here.
func (e *Engine) ResumeFleet(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.fleets[name]
	if f == nil {
		return false
	}
	if f.Paused {
		f.Paused, f.Manual = false, false
		f.Baseline = f.Failures
		f.dirty = true
		e.log.Info("configuration rollout resumed", "fleet", name)
	}
	work := map[uuid.UUID]struct{}{}
	for m := range f.waves.Members() {
		work[m] = struct{}{}
	}
	e.evaluate(work)
	e.saveFleets()
	e.kick()
	return true
}
