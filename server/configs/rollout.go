package configs

import (
	"time"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/rollout"
)

// fleetRollout is one fleet's configuration rollout.
type fleetRollout struct {
	def estate.Fleet
	// waves counts members by sync state; the last wave holds those
	// without a listed wave.
	waves *rollout.Waves
	rolloutState
	dirty bool
}

// rolloutState is what survives a restart.
type rolloutState struct {
	// Digest is the template source the rollout is about: a new one starts
	// a new rollout.
	Digest string `json:"digest"`
	rollout.State
	// Since is when the fleet first had a configuration: agents registered
	// after it bootstrap with their assigned configuration at once.
	Since time.Time `json:"since"`
}

// rolloutKey prefixes the store keys of the fleets' rollout states.
const rolloutKey = "configrollout/"

// syncDone reports whether a member in a sync state no longer holds back
// later waves.
func syncDone(state string) bool {
	return state == SyncNone || state == SyncInSync || state == SyncFailed || state == waveRolledBack
}

func newFleetRollout(def estate.Fleet) *fleetRollout {
	n := 1
	if def.Rollout != nil {
		n = len(def.Rollout.Waves) + 1
	}
	return &fleetRollout{def: def, waves: rollout.New(n, syncDone)}
}

// waveOf is the wave index of a view in this fleet.
func (f *fleetRollout) waveOf(view attributes.View) int {
	return min(f.def.WaveOf(view), f.waves.Len()-1)
}

// count puts a record in its fleet's wave counts, leaving the fleet it
// was counted in before. Caller holds e.mu.
func (e *Engine) count(r *record) {
	f := e.fleets[r.fleet]
	if f == nil || r.assigned == "" && r.desired == "" {
		e.uncount(r)
		return
	}
	if r.countedIn != r.fleet {
		e.uncount(r)
	}
	f.waves.Set(r.uid, int(r.wave), r.waveState())
	r.countedIn = r.fleet
}

func (e *Engine) uncount(r *record) {
	if f := e.fleets[r.countedIn]; f != nil {
		f.waves.Remove(r.uid)
	}
	r.countedIn = ""
}
