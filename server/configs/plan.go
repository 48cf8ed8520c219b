package configs

import (
	"slices"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/internal/configrender"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/registry"
)

// Planned is one agent the engine configures, as it is now and as a
// candidate estate would configure it.
type Planned struct {
	UID  uuid.UUID
	Kind registry.Kind
	View attributes.View
	// Now: the assigned configuration, its body (nil when this instance
	// does not hold it), its render error and warnings.
	Assigned     string
	AssignedBody []byte
	Err          string
	Warnings     []configrender.Warning
	// Under the candidate: the fleet with a configuration the agent would
	// be in ("" for none), the configuration's hash and body ("" and nil
	// for none, or when it fails), the render error (or why no fleet
	// could be chosen) and the warnings.
	Fleet        string
	Hash         string
	Body         []byte
	NextErr      string
	NextWarnings []configrender.Warning
}

// Changed reports whether the candidate would assign p another
// configuration than the one it has: a new hash, or none where it has one.
// A render error keeps what is assigned, so it is no change.
func (p Planned) Changed() bool { return p.NextErr == "" && p.Hash != p.Assigned }

// NewWarnings are the candidate's warnings that p does not have now.
func (p Planned) NewWarnings() []configrender.Warning {
	var out []configrender.Warning
	for _, w := range p.NextWarnings {
		if !slices.Contains(p.Warnings, w) {
			out = append(out, w)
		}
	}
	return out
}

// Plan renders every agent the engine configures under cand without
// applying it: nothing the engine keeps changes, and nothing is sent or
// stored. The Blueprints are compiled and the configurations rendered
// without the Engine's lock (which is held only to copy each agent's
// facts), reusing the renders of Blueprints cand leaves unchanged.
func (e *Engine) Plan(cand *estate.Estate) []Planned {
	e.mu.Lock()
	prev := e.templates
	type fact struct {
		p  Planned
		in configrender.Input
	}
	facts := make([]fact, 0, len(e.records))
	for uid, r := range e.records {
		if !r.view.Known() || (r.kind != registry.KindCollector && r.kind != registry.KindBridge) {
			continue
		}
		p := Planned{UID: uid, Kind: r.kind, View: r.view}
		if r.detail != nil {
			p.Assigned, p.Err, p.Warnings = r.assigned, r.err, r.warnings
			p.AssignedBody = e.bodies[r.assigned]
		}
		in, _ := e.inputOf(r)
		facts = append(facts, fact{p: p, in: in})
	}
	e.mu.Unlock()

	templates := compileAll(blueprintsOf(cand), blueprintIDs(cand), prev)
	jobs := make([]renderJob, 0, len(facts))
	tms := make([]*template, len(facts))
	for i := range facts {
		f := &facts[i]
		def, err := cand.FleetFor(f.p.View)
		switch {
		case err != nil:
			f.p.NextErr = err.Error()
			continue
		case def == nil || def.Config == nil:
			continue
		case f.p.Kind == registry.KindBridge && !def.Config.Bridges:
			f.p.NextErr = "fleet " + def.Name + " does not configure Bridges: set config.bridges: true to opt in"
			continue
		}
		f.p.Fleet = def.Name
		tm := templates[def.Config.Blueprint]
		tms[i] = tm
		if key := tm.key(f.in); tm.t != nil {
			if _, ok := tm.cached(key); !ok {
				jobs = append(jobs, renderJob{tm: tm, in: f.in, key: key})
			}
		}
	}
	renderJobs(jobs)
	out := make([]Planned, len(facts))
	for i, f := range facts {
		if tm := tms[i]; tm != nil {
			res, _ := tm.cached(tm.key(f.in))
			if res.err != nil {
				f.p.NextErr = renderMessage(tm.id, res.err)
			} else {
				f.p.Hash, f.p.Body, f.p.NextWarnings = res.hash, res.body, res.warnings
			}
		}
		out[i] = f.p
	}
	slices.SortFunc(out, func(a, b Planned) int { return slices.Compare(a.UID[:], b.UID[:]) })
	return out
}
