package configrender

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/myriarch/myriarch/internal/blueprint"
	"github.com/myriarch/myriarch/internal/vars"
)

// Dynamic providers applied to Components: a receiver that
// reads a variable of a provider with mappings is rendered once per
// mapping, as <type>/<name>-<mapping id>, in the pipelines the receiver is
// in. A receiver whose references name several dynamic providers as
// alternatives (${docker.paths.log|local_dynamic.path}) is rendered once
// per mapping of each, as <type>/<name>-<provider>-<mapping id>; each copy
// reads its mapping for its provider's variables and the context for the
// others, so the alternatives pick what that mapping has. A mapping with
// processors gets, for each such pipeline, a pipeline of its own,
// <signal>/<name>-<mapping id>, whose receiver is the copy, whose
// processors are the mapping's followed by the pipeline's, and whose
// exporters are the pipeline's: so the mapping's processors apply to that
// copy's data only, and only when the copy read one of the mapping's
// variables (a copy whose references fell back to constants has none). A
// copy whose mapping lacks a variable it reads is left out. When the
// providers have no mapping at all, the receiver renders once, as itself,
// if its references resolve without them (a constant alternative, a
// context variable); otherwise it is left out.

// receiverCopy is one receiver rendered for one mapping.
type receiverCopy struct {
	placed blueprint.Placed
	name   string             // the copy's id without its type: <name>-<mapping id>
	procs  []blueprint.Placed // the mapping's processors
}

// dynamicOf names the dynamic providers receiver i reads variables of,
// sorted.
func (t *Template) dynamicOf(i int, in Input) []string {
	var dyn []string
	for _, p := range t.providers[i] {
		if _, ok := in.Dynamic[p]; ok {
			dyn = append(dyn, p)
		}
	}
	slices.Sort(dyn)
	return dyn
}

// sortedMappings orders mappings by id: the render does not depend on the
// order the provider listed them in.
func sortedMappings(ms []Mapping) []Mapping {
	out := slices.Clone(ms)
	slices.SortFunc(out, func(a, b Mapping) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// copies renders receiver c for the mappings of the dynamic providers ps
// (see above).
func (t *Template) copies(c blueprint.Placed, ps []string, in Input, left *int) ([]receiverCopy, []Dropped, error) {
	typ, name, _ := strings.Cut(c.ID, "/")
	var out []receiverCopy
	var dropped []Dropped
	total := 0
	for _, p := range ps {
		ms := sortedMappings(in.Dynamic[p])
		total += len(ms)
		for _, m := range ms {
			cp := receiverCopy{name: name + "-" + mappingSuffix(m.ID)}
			if len(ps) > 1 {
				cp.name = name + "-" + p + "-" + mappingSuffix(m.ID)
			}
			cp.placed = c
			cp.placed.ID = typ + "/" + cp.name
			used := false
			cfg, err := t.substitute(c.Config, env{set: vars.FlatMappingSet(in.Context, p, m.Vars), typed: in.mappingTyped(p, m),
				seen: func(v string) { used = used || strings.HasPrefix(v, p+".") }}, left)
			if d, err := t.dropOrFail(c, cp.placed.ID, err); err != nil || d != nil {
				if d != nil {
					dropped = append(dropped, *d)
				}
				if err != nil {
					return nil, nil, err
				}
				continue
			}
			cp.placed.Config = cfg
			if used {
				procs, err := mappingProcessors(cp.name, m.Processors)
				if err != nil {
					dropped = append(dropped, Dropped{Receiver: cp.placed.ID, Source: c.Source, Reason: fmt.Sprintf("mapping %q of %s: %v", m.ID, p, err)})
					continue
				}
				cp.procs = procs
			}
			out = append(out, cp)
		}
	}
	if total > 0 {
		return out, dropped, nil
	}
	// No mapping at all: the receiver as itself, if the context alone
	// gives it every value.
	cfg, err := t.substitute(c.Config, env{set: vars.FlatSet(in.Context), typed: in.typed}, left)
	if d, err := t.dropOrFail(c, c.ID, err); err != nil || d != nil {
		if d != nil && d.Variable != "" {
			d.Variable, d.Reason = "", "the dynamic provider "+strings.Join(ps, " and ")+" has no mapping, and "+d.Variable+" has no alternative"
		}
		return nil, []Dropped{*d}, err
	}
	self := receiverCopy{placed: c, name: name}
	self.placed.Config = cfg
	return []receiverCopy{self}, nil, nil
}

// dropOrFail turns a substitution's error into what it means for a
// receiver (rendered id id): nothing (nil, nil), a drop (a missing
// variable, a bad value), or a render error.
func (t *Template) dropOrFail(c blueprint.Placed, id string, err error) (*Dropped, error) {
	var missing *vars.MissingError
	var collision *keyCollisionError
	switch {
	case err == nil:
		return nil, nil
	case errors.Is(err, errValuesOverMax), errors.As(err, &collision):
		return nil, &Error{Blueprint: t.id, Component: string(c.Class) + " " + c.ID, Source: c.Source, Reason: err.Error()}
	case errors.As(err, &missing):
		return &Dropped{Receiver: id, Source: c.Source, Variable: missing.Reference}, nil
	}
	return &Dropped{Receiver: id, Source: c.Source, Reason: err.Error()}, nil
}

// placeCopies puts the copies in place of their receivers: the Components
// where the receiver was, the mapping processors after them, and the
// pipelines as the package comment says.
func (t *Template) placeCopies(p *blueprint.Plan, copies map[string][]receiverCopy) error {
	var comps []blueprint.Placed
	var procs []blueprint.Placed
	for _, c := range p.Components {
		cs, ok := copies[c.ID]
		if !ok {
			comps = append(comps, c)
			continue
		}
		for _, cp := range cs {
			comps = append(comps, cp.placed)
			procs = append(procs, cp.procs...)
		}
	}
	p.Components = append(comps, procs...)
	var pipes []blueprint.Pipeline
	for _, pl := range p.Pipelines {
		var receivers []string
		var own []blueprint.Pipeline
		for _, id := range pl.Receivers {
			cs, ok := copies[id]
			if !ok {
				receivers = append(receivers, id)
				continue
			}
			for _, cp := range cs {
				if len(cp.procs) == 0 {
					receivers = append(receivers, cp.placed.ID)
					continue
				}
				ids := make([]string, 0, len(cp.procs)+len(pl.Processors))
				for _, pr := range cp.procs {
					ids = append(ids, pr.ID)
				}
				own = append(own, blueprint.Pipeline{Name: pl.Name + "/" + cp.name, Receivers: []string{cp.placed.ID},
					Processors: append(ids, pl.Processors...), Exporters: pl.Exporters})
			}
		}
		pl.Receivers = receivers
		pipes = append(pipes, pl)
		pipes = append(pipes, own...)
	}
	p.Pipelines = pipes
	seen := map[string]string{}
	for _, c := range p.Components {
		if prev, dup := seen[c.ID]; dup {
			return &Error{Blueprint: t.id, Reason: fmt.Sprintf("rendered id %q of %s collides with %s", c.ID, c.Source, prev)}
		}
		seen[c.ID] = c.Source
	}
	return nil
}

var unsafeIDChars = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// mappingSuffix makes a mapping id part of a component id: the id itself
// when it is short and plain, otherwise a readable prefix and a digest, so
// different ids stay different and an id names the same copy every time.
func mappingSuffix(id string) string {
	s := unsafeIDChars.ReplaceAllString(id, "_")
	if s == id && len(s) <= 64 && s != "" {
		return s
	}
	sum := sha256.Sum256([]byte(id))
	return s[:min(len(s), 40)] + "_" + hex.EncodeToString(sum[:5])
}
