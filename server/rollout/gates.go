package rollout

import (
	"iter"

	"github.com/google/uuid"
)

// Gates remembers where fleets' wave gates stood before an evaluation
// moved their members, to find the members of the waves it opened.
type Gates map[*Waves]int

// Note records where w's gates stand now, unless already noted; a nil w is
// left out.
func (g Gates) Note(w *Waves) {
	if w == nil {
		return
	}
	if _, seen := g[w]; !seen {
		g[w] = w.FirstClosed()
	}
}

// Opened iterates over the members of the waves whose gate opened since
// they were noted.
func (g Gates) Opened() iter.Seq[uuid.UUID] {
	return func(yield func(uuid.UUID) bool) {
		for w, before := range g {
			after := w.FirstClosed()
			if after <= before {
				continue
			}
			for m := range w.MembersOf(before, after) {
				if !yield(m) {
					return
				}
			}
		}
	}
}
