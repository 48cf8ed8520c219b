package offers

import (
	"context"

	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/rollout"
)

// fleet is a fleet definition with its rollout progress; guarded by
// Engine.mu (its methods need the lock held).
type fleet struct {
	def estate.Fleet
	// waves counts members by offer state; the last wave holds agents
	// without a listed wave.
	waves *rollout.Waves
	rolloutState
	dirty bool
}

// rolloutState is a fleet's persisted rollout state, kept per target version.
type rolloutState struct {
	Target string `json:"targetVersion"`
	rollout.State
}

// rolloutKey prefixes the store keys of the fleets' rollout states.
const rolloutKey = "rollout/"

// loadFleetStates reads the persisted rollouts; called by New before the
// engine is shared, so without the lock.
func (e *Engine) loadFleetStates(ctx context.Context) error {
	m, err := e.rollouts.List(ctx)
	if err != nil {
		return err
	}
	e.stored = m
	for name, r := range rollout.Decode[rolloutState](m) {
		e.fleets[name] = &fleet{def: estate.Fleet{Name: name}, waves: rollout.New(1, offerDone), rolloutState: r}
	}
	return nil
}

// applyFleetStatesLocked sets the stored rollout states (by fleet name) of
// the fleets in force; a state about another target version than the
// fleet's is a rollout that is over (a new one starts). Caller holds e.mu.
func (e *Engine) applyFleetStatesLocked(states map[string][]byte) {
	for name, r := range rollout.Decode[rolloutState](states) {
		f := e.fleets[name]
		if f == nil {
			continue
		}
		if f.def.Package != "" && r.Target != f.def.TargetVersion {
			f.rolloutState = rolloutState{Target: f.def.TargetVersion, State: r.Restart()}
			f.dirty = true
			continue
		}
		f.rolloutState = r
	}
}

// wavesLocked is the wave counts of fleet name; nil without such a fleet.
// Caller holds e.mu.
func (e *Engine) wavesLocked(name string) *rollout.Waves {
	if f := e.fleets[name]; f != nil {
		return f.waves
	}
	return nil
}

func (f *fleet) groups() int {
	if f.def.Rollout == nil {
		return 1
	}
	return len(f.def.Rollout.Waves) + 1
}

// syncFleetsLocked reconciles fleet records with the estate; caller holds e.mu.
func (e *Engine) syncFleetsLocked() {
	seen := map[string]bool{}
	if e.est != nil {
		for _, def := range e.est.Fleets {
			seen[def.Name] = true
			f := e.fleets[def.Name]
			if f == nil {
				f = &fleet{}
				e.fleets[def.Name] = f
			}
			f.def = def
			if f.Target != def.TargetVersion {
				// A new target starts a new rollout; an operator's pause
				// holds it too, until resumed.
				f.rolloutState = rolloutState{Target: def.TargetVersion, State: f.Restart()}
				f.dirty = true
			}
			f.waves = rollout.New(f.groups(), offerDone)
		}
	}
	for name, f := range e.fleets {
		if !seen[name] {
			if f.def.Package != "" {
				f.dirty = true // forget state of removed fleets
			}
			delete(e.fleets, name)
		}
	}
	// Membership and counts are rebuilt by the full re-evaluation that follows.
	for _, c := range e.collectors {
		c.countFl = ""
	}
}

// dirtyFleetsLocked returns the rollout states to write and marks them written;
// only the leading instance writes them.
func (e *Engine) dirtyFleetsLocked() map[string]*rolloutState {
	out := map[string]*rolloutState{}
	for name, f := range e.fleets {
		if f.dirty && !e.role.Leads() {
			f.dirty = false
		}
		if f.dirty {
			r := f.rolloutState
			out[name] = &r
			f.dirty = false
		}
	}
	return out
}

// saveFleets persists rollout states outside the engine lock.
func (e *Engine) saveFleets(dirty map[string]*rolloutState) {
	for name, r := range dirty {
		e.rollouts.Put(name, r)
	}
}

// offerDone reports whether a collector in an offer state no longer holds
// back later waves.
// A collector no offer can be made to (NotOffered) waits on nothing either.
func offerDone(state string) bool { return state == UpToDate || state == Failed || state == NotOffered }

// countLocked puts a collector's state in its fleet's wave counts, leaving the
// fleet it was counted in before.
func (e *Engine) countLocked(c *collector) {
	f := e.fleets[c.fleet]
	if f == nil || c.state == "" {
		e.uncountLocked(c)
		return
	}
	if c.countFl != c.fleet {
		e.uncountLocked(c)
	}
	f.waves.Set(c.uid, int(c.wave), c.state)
	c.countFl = c.fleet
}

func (e *Engine) uncountLocked(c *collector) {
	if f := e.fleets[c.countFl]; f != nil {
		f.waves.Remove(c.uid)
	}
	c.countFl = ""
}
