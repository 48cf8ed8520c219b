package offers

import (
	"slices"
	"strings"

	"github.com/myriarch/myriarch/server/rollout"
)

// StateCounts returns the collectors of fleets with a package by offer
// state, summed over the fleets' waves. The engine keeps these counts as
// states change, so this costs per fleet and wave, not per agent.
func (e *Engine) StateCounts() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for _, f := range e.fleets {
		if f.def.Package == "" {
			continue
		}
		for w := range f.waves.Len() {
			for st, n := range f.waves.Counts(w) {
				out[st] += n
			}
		}
	}
	return out
}

// Gauges shows every package rollout, by fleet name.
func (e *Engine) Gauges() []rollout.Gauge {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]rollout.Gauge, 0, len(e.fleets))
	for _, f := range e.fleets {
		if f.def.Package == "" {
			continue
		}
		out = append(out, rollout.GaugeOf(f.def, f.State, f.waves, func(st string) bool { return st == Failed }))
	}
	slices.SortFunc(out, func(a, b rollout.Gauge) int { return strings.Compare(a.Fleet, b.Fleet) })
	return out
}
