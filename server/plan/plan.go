// Package plan says what a candidate estate would change before it is
// applied, as terraform plan does: per fleet, the collectors whose
// configuration would change, a unified diff for one of them per distinct
// new body, the warnings and render errors it would bring, and the
// collectors whose target version would change. Building a plan changes
// nothing.
package plan

import (
	"cmp"
	"slices"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/blueprint"
	"github.com/myriarch/myriarch/internal/configrender"
	"github.com/myriarch/myriarch/internal/linediff"
	"github.com/myriarch/myriarch/server/configs"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/registry"
)

// MaxDiffs bounds the diffs of one plan: bodies past it are counted
// (Fleet.BodiesWithoutDiff), not diffed, so that a plan of an estate where
// every collector has its own body stays a few megabytes.
const MaxDiffs = 1000

// Revision names an estate: its revision (a Git commit, or "sha256:…"
// over its files) and the commit's author.
type Revision struct {
	Revision string `json:"revision"`
	Author   string `json:"author,omitempty"`
}

// Plan is what a candidate estate would change. When it does not load,
// Errors lists every problem and nothing else is planned.
type Plan struct {
	Current   Revision `json:"current"`
	Candidate Revision `json:"candidate"`
	// Source is where the candidate was read: "git" (a revision) or
	// "directory" (the estate directory as it is on disk).
	Source   string              `json:"source"`
	OK       bool                `json:"ok"`
	Errors   []estate.Problem    `json:"errors"`
	Findings []blueprint.Finding `json:"findings"`
	Summary  Summary             `json:"summary"`
	Fleets   []Fleet             `json:"fleets"`
	// Unassigned are the collectors that have a configuration now and
	// would have none (they leave every fleet with a configuration).
	Unassigned []uuid.UUID `json:"unassigned"`
}

// Summary counts the plan.
type Summary struct {
	Collectors     int `json:"collectors"`
	Changed        int `json:"changed"`
	Warnings       int `json:"warnings"`
	RenderErrors   int `json:"renderErrors"`
	VersionChanges int `json:"versionChanges"`
}

// Fleet is the plan of one fleet of the candidate estate.
type Fleet struct {
	Name      string `json:"name"`
	Blueprint string `json:"blueprint,omitempty"`
	// Collectors are the fleet's members under the candidate.
	Collectors int `json:"collectors"`
	// Changed are the members whose configuration would change.
	Changed []uuid.UUID `json:"changed"`
	Bodies  []Body      `json:"bodies"`
	// BodiesWithoutDiff counts distinct new bodies past MaxDiffs.
	BodiesWithoutDiff int            `json:"bodiesWithoutDiff,omitempty"`
	Warnings          []AgentWarning `json:"warnings"`
	Errors            []AgentError   `json:"errors"`
	Version           *VersionChange `json:"version,omitempty"`
}

// Body is one distinct new configuration and the diff to it from what one
// of its collectors (the representative) is assigned now.
type Body struct {
	Hash           string    `json:"hash"`
	Collectors     int       `json:"collectors"`
	Representative uuid.UUID `json:"representative"`
	From           string    `json:"from"` // the representative's assigned hash ("" for none)
	Diff           string    `json:"diff"`
	// DiffOmitted says why there is no diff: "too large" (past the
	// diff's bounds) or "current body not held" (another instance made it).
	DiffOmitted string `json:"diffOmitted,omitempty"`
}

// AgentWarning is a warning a collector's configuration would bring.
type AgentWarning struct {
	Agent   uuid.UUID            `json:"agent"`
	Warning configrender.Warning `json:"warning"`
}

// AgentError is a render error a collector would get (it keeps what it
// is assigned).
type AgentError struct {
	Agent uuid.UUID `json:"agent"`
	Error string    `json:"error"`
}

// VersionChange is a fleet's target version moving: the collectors whose
// target would change, from the target of most of them.
type VersionChange struct {
	From       string `json:"from"`
	To         string `json:"to"`
	Collectors int    `json:"collectors"`
}

// Failed is the plan of a candidate that does not load.
func Failed(cur Revision, cand Revision, source string, problems []estate.Problem) Plan {
	return Plan{Current: cur, Candidate: cand, Source: source, Errors: problems, Findings: []blueprint.Finding{},
		Fleets: []Fleet{}, Unassigned: []uuid.UUID{}}
}

// Build plans cand against cur (nil: no estate in force) for the agents
// planned (configs.Engine.Plan under cand).
func Build(cur, cand *estate.Estate, source string, planned []configs.Planned) Plan {
	p := Plan{Current: RevisionOf(cur), Candidate: RevisionOf(cand), Source: source, OK: true, Errors: []estate.Problem{},
		Findings: cand.Findings, Fleets: []Fleet{}, Unassigned: []uuid.UUID{}}
	if p.Findings == nil {
		p.Findings = []blueprint.Finding{}
	}
	fleets := map[string]*Fleet{}
	for _, def := range cand.Fleets {
		f := &Fleet{Name: def.Name, Changed: []uuid.UUID{}, Bodies: []Body{}, Warnings: []AgentWarning{}, Errors: []AgentError{}}
		if def.Config != nil {
			f.Blueprint = def.Config.Blueprint
		}
		fleets[def.Name] = f
	}
	type bodyOf struct {
		fleet, hash string
	}
	bodies := map[bodyOf]*Body{}
	var order []bodyOf
	froms, nexts := map[bodyOf][]byte{}, map[bodyOf][]byte{}
	versions := map[string]map[[2]string]int{}
	for _, a := range planned {
		p.Summary.Collectors++
		if f := fleetFor(cand, a); f != nil {
			ff := fleets[f.Name]
			ff.Collectors++
			if a.Kind == registry.KindCollector {
				if from, to := targetOf(cur, a), f.TargetVersion; from != to {
					if versions[f.Name] == nil {
						versions[f.Name] = map[[2]string]int{}
					}
					versions[f.Name][[2]string{from, to}]++
					p.Summary.VersionChanges++
				}
			}
		} else if a.Kind == registry.KindCollector && targetOf(cur, a) != "" {
			p.Summary.VersionChanges++ // leaves its fleet: no target any more
		}
		ff := fleets[a.Fleet]
		if a.NextErr != "" {
			p.Summary.RenderErrors++
			if ff != nil {
				ff.Errors = append(ff.Errors, AgentError{Agent: a.UID, Error: a.NextErr})
			}
			continue
		}
		for _, w := range a.NewWarnings() {
			p.Summary.Warnings++
			if ff != nil {
				ff.Warnings = append(ff.Warnings, AgentWarning{Agent: a.UID, Warning: w})
			}
		}
		if !a.Changed() {
			continue
		}
		p.Summary.Changed++
		if ff == nil {
			p.Unassigned = append(p.Unassigned, a.UID)
			continue
		}
		ff.Changed = append(ff.Changed, a.UID)
		k := bodyOf{a.Fleet, a.Hash}
		if b := bodies[k]; b != nil {
			b.Collectors++
			continue
		}
		bodies[k] = &Body{Hash: a.Hash, Collectors: 1, Representative: a.UID, From: a.Assigned}
		froms[k], nexts[k] = a.AssignedBody, a.Body
		order = append(order, k)
		if a.Assigned != "" && a.AssignedBody == nil {
			bodies[k].DiffOmitted = "current body not held"
		}
	}
	// The most shared bodies first; diffs for the first MaxDiffs.
	slices.SortStableFunc(order, func(x, y bodyOf) int { return cmp.Compare(bodies[y].Collectors, bodies[x].Collectors) })
	for i, k := range order {
		b, f := bodies[k], fleets[k.fleet]
		if i >= MaxDiffs {
			f.BodiesWithoutDiff++
			continue
		}
		if b.DiffOmitted == "" {
			d, ok := linediff.Unified(label(b.Representative, b.From), label(b.Representative, b.Hash), string(froms[k]), string(nexts[k]))
			if ok {
				b.Diff = d
			} else {
				b.DiffOmitted = "too large"
			}
		}
		f.Bodies = append(f.Bodies, *b)
	}
	for _, def := range cand.Fleets {
		f := fleets[def.Name]
		if vs := versions[def.Name]; len(vs) > 0 {
			vc := VersionChange{To: def.TargetVersion}
			most := 0
			for ft, n := range vs {
				vc.Collectors += n
				if n > most || (n == most && ft[0] < vc.From) {
					vc.From, most = ft[0], n
				}
			}
			f.Version = &vc
		}
		p.Fleets = append(p.Fleets, *f)
	}
	return p
}

// RevisionOf names e (nil: no estate).
func RevisionOf(e *estate.Estate) Revision {
	if e == nil {
		return Revision{}
	}
	return Revision{Revision: e.Revision, Author: e.Author}
}

// fleetFor is the candidate's fleet of a (nil for none or an ambiguity).
func fleetFor(cand *estate.Estate, a configs.Planned) *estate.Fleet {
	def, err := cand.FleetFor(a.View)
	if err != nil {
		return nil
	}
	return def
}

// targetOf is a's target version under cur ("" for none).
func targetOf(cur *estate.Estate, a configs.Planned) string {
	if cur == nil {
		return ""
	}
	def, err := cur.FleetFor(a.View)
	if err != nil || def == nil {
		return ""
	}
	return def.TargetVersion
}

// label names one side of a diff: the collector and the hash.
func label(uid uuid.UUID, hash string) string {
	if hash == "" {
		return uid.String() + " (no configuration)"
	}
	return uid.String() + " " + hash[:min(12, len(hash))]
}
