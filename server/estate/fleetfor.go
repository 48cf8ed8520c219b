package estate

import (
	"fmt"
	"sort"

	"github.com/myriarch/myriarch/internal/attributes"
)

// AmbiguousFleetError is returned when several fleets of the same, highest
// priority match an agent.
type AmbiguousFleetError struct {
	Names    []string // sorted
	Priority int
}

func (e *AmbiguousFleetError) Error() string {
	return fmt.Sprintf("fleets %v match with the same priority %d", e.Names, e.Priority)
}

// FleetFor picks the fleet of an attribute view: the matching fleet with
// the highest priority; nil when none matches. When several match with
// that priority it returns the first by name and an *AmbiguousFleetError.
func (e *Estate) FleetFor(view attributes.View) (*Fleet, error) {
	var best []*Fleet
	for i := range e.Fleets {
		def := &e.Fleets[i]
		if !def.Matches(view) {
			continue
		}
		switch {
		case len(best) == 0 || def.Priority > best[0].Priority:
			best = []*Fleet{def}
		case def.Priority == best[0].Priority:
			best = append(best, def)
		}
	}
	switch len(best) {
	case 0:
		return nil, nil
	case 1:
		return best[0], nil
	}
	sort.Slice(best, func(i, j int) bool { return best[i].Name < best[j].Name })
	names := make([]string, len(best))
	for i, f := range best {
		names[i] = f.Name
	}
	return best[0], &AmbiguousFleetError{Names: names, Priority: best[0].Priority}
}
