package offers

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
