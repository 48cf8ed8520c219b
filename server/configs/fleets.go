package configs

import (
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/offers"
	"github.com/myriarch/myriarch/server/rollout"
)

// RolloutJSON is a fleet's configuration rollout, the "config" of its
// entry in GET /api/v1/fleets.
type RolloutJSON struct {
	Blueprint string `json:"blueprint"`
	Bridges   bool   `json:"bridges"`
	rollout.Summary
	Waves []WaveJSON `json:"waves"`
}

// WaveJSON counts a wave's collectors by sync state; States also counts
// those rolled back from a failed configuration ("rolled_back", drift to
// their sync state), and Failed both the failed and the rolled back.
type WaveJSON struct {
	rollout.WaveJSON
	InSync int `json:"inSync"`
	Failed int `json:"failed"`
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
	out := RolloutJSON{Blueprint: f.def.Config.Blueprint, Bridges: f.def.Config.Bridges,
		Summary: rollout.Summarize(f.def, f.State, f.waves.Complete()), Waves: []WaveJSON{}}
	for _, row := range rollout.Rows(f.def, f.waves) {
		out.Waves = append(out.Waves, WaveJSON{WaveJSON: row,
			InSync: row.States[SyncInSync], Failed: row.States[SyncFailed] + row.States[waveRolledBack]})
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
		f.Resume()
		f.dirty = true
		e.log.Info("configuration rollout resumed", "fleet", name)
		e.opts.Notice.Say(estate.EventRolloutResumed, name, "configuration rollout resumed by an operator")
	}
	e.evaluate(f.waves.MemberSet())
	e.saveFleets()
	e.kick()
	return true
}
