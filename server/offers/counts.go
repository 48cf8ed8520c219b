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
		for _, m := range f.counts {
			for st, n := range m {
				if n > 0 {
					out[st] += n
				}
			}
		}
	}
	return out
}
