package configrender

import (
	"slices"

	"github.com/myriarch/myriarch/internal/blueprint"
)

// prune removes the gone receivers from p, then every pipeline left
// without receivers or exporters, until the plan is one the collector
// accepts: a connector must stay both an exporter of one pipeline and a
// receiver of another, so a connector that lost a side is removed too.
// Components no remaining pipeline uses are left out (extensions stay).
func prune(p *blueprint.Plan, gone map[string]bool) {
	connectors := map[string]bool{}
	for _, c := range p.Components {
		if c.Class == blueprint.ClassConnector {
			connectors[c.ID] = true
		}
	}
	drop := func(ids []string) []string {
		return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return gone[id] })
	}
	pipes := make([]blueprint.Pipeline, 0, len(p.Pipelines))
	for _, pl := range p.Pipelines {
		pl.Receivers, pl.Exporters = drop(pl.Receivers), drop(pl.Exporters)
		pipes = append(pipes, pl)
	}
	for changed := true; changed; {
		changed = false
		pipes = slices.DeleteFunc(pipes, func(pl blueprint.Pipeline) bool {
			if len(pl.Receivers) == 0 || len(pl.Exporters) == 0 {
				changed = true
				return true
			}
			return false
		})
		asRecv, asExp := map[string]bool{}, map[string]bool{}
		for _, pl := range pipes {
			for _, id := range pl.Receivers {
				asRecv[id] = true
			}
			for _, id := range pl.Exporters {
				asExp[id] = true
			}
		}
		for id := range connectors {
			if !gone[id] && (asRecv[id] != asExp[id]) {
				gone[id] = true
				changed = true
			}
		}
		if changed {
			for i := range pipes {
				pipes[i].Receivers, pipes[i].Exporters = drop(pipes[i].Receivers), drop(pipes[i].Exporters)
			}
		}
	}
	used := map[string]bool{}
	for _, pl := range pipes {
		for _, ids := range [][]string{pl.Receivers, pl.Processors, pl.Exporters} {
			for _, id := range ids {
				used[id] = true
			}
		}
	}
	p.Pipelines = pipes
	p.Components = slices.DeleteFunc(p.Components, func(c blueprint.Placed) bool {
		return c.Class != blueprint.ClassExtension && !used[c.ID]
	})
}
