package rollout

import (
	"maps"

	"github.com/myriarch/myriarch/server/estate"
)

// Rollout states, as the fleets API shows them (Summary.State).
const (
	Running  = "running"
	Paused   = "paused"
	Complete = "complete"
)

// Summary is how the fleets API shows a fleet's rollout, whatever is
// rolled out.
type Summary struct {
	State       string `json:"state"` // running | paused | complete
	Failures    int    `json:"failures"`
	MaxFailures *int   `json:"maxFailures"`
	// PausedBy says why a paused rollout is paused: operator or failures.
	PausedBy string `json:"pausedBy,omitempty"`
}

// Summarize shows the rollout of def in state s; complete: every member
// is where the rollout takes it.
func Summarize(def estate.Fleet, s State, complete bool) Summary {
	out := Summary{Failures: s.Failures, PausedBy: s.PausedBy()}
	if mf, ok := MaxFailures(def); ok {
		out.MaxFailures = &mf
	}
	switch {
	case s.Paused:
		out.State = Paused
	case complete:
		out.State = Complete
	default:
		out.State = Running
	}
	return out
}

// WaveJSON is how the fleets API shows one wave: its name, how many
// members it has, whether its gate is open, and its members counted by
// state (a copy: the caller's to keep).
type WaveJSON struct {
	Wave   string         `json:"wave"`
	Total  int            `json:"total"`
	Open   bool           `json:"open"`
	States map[string]int `json:"states"`
}

// Rows shows the waves w counts for def: named as def lists them, the
// last "(no wave)" (members without a listed wave), or the one "all" of a
// fleet without a rollout section.
func Rows(def estate.Fleet, w *Waves) []WaveJSON {
	out := make([]WaveJSON, 0, w.Len())
	for i := range w.Len() {
		name := "all"
		if r := def.Rollout; r != nil {
			name = "(no wave)"
			if i < len(r.Waves) {
				name = r.Waves[i]
			}
		}
		out = append(out, WaveJSON{Wave: name, Total: w.Total(i), Open: w.GateOpen(i), States: maps.Clone(w.Counts(i))})
	}
	return out
}
