package rollout

import "github.com/myriarch/myriarch/server/estate"

// Why a paused rollout is paused (State.PausedBy).
const (
	ByOperator = "operator"
	ByFailures = "failures"
)

// State is the part of a fleet's rollout that survives a restart and is
// alike for every rolled-out thing: whether it is paused, and by whom, and
// its failure budget. A rolled-out thing's own persisted state embeds it,
// so these fields stand at the top level of its stored JSON object.
type State struct {
	Paused   bool `json:"paused"`
	Failures int  `json:"failures"`
	// Baseline is the failure count at the last resume: the budget
	// compares failures since then with the fleet's maxFailures.
	Baseline int `json:"baseline"`
	// Manual marks a pause an operator asked for (not too many failures).
	Manual bool `json:"manual,omitempty"`
}

// Pause holds the rollout by an operator's decision; it reports whether
// the rollout was running (whether the state changed).
func (s *State) Pause() bool {
	if s.Paused {
		return false
	}
	s.Paused, s.Manual = true, true
	return true
}

// Resume lets the rollout continue; failures count anew from here.
func (s *State) Resume() {
	s.Paused, s.Manual = false, false
	s.Baseline = s.Failures
}

// Fail counts a member's failure against the budget of def's rollout and
// pauses the rollout when the failures since the last resume exceed its
// maxFailures (a fleet without a rollout section has no budget); it
// reports whether it paused it now.
func (s *State) Fail(def estate.Fleet) bool {
	s.Failures++
	if mf, ok := MaxFailures(def); ok && !s.Paused && s.Spent() > mf {
		s.Paused = true
		return true
	}
	return false
}

// Spent is the number of failures since the last resume: what the budget
// has spent.
func (s State) Spent() int { return s.Failures - s.Baseline }

// Restart is the state a new rollout (a new target) starts from: an
// operator's pause holds it too, until resumed.
func (s State) Restart() State { return State{Paused: s.Manual, Manual: s.Manual} }

// PausedBy is why a paused rollout is paused, ByOperator or ByFailures;
// "" while it runs.
func (s State) PausedBy() string {
	switch {
	case !s.Paused:
		return ""
	case s.Manual:
		return ByOperator
	default:
		return ByFailures
	}
}

// MaxFailures is the failure budget of def's rollout; false when def has
// no rollout section (and so no budget).
func MaxFailures(def estate.Fleet) (int, bool) {
	if def.Rollout == nil {
		return 0, false
	}
	return def.Rollout.MaxFailures, true
}
