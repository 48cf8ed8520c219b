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

// Dynamic providers (seed 001) applied to Components: a receiver that
// reads a variable of a provider with mappings is rendered once per
// mapping, as <type>/<name>-<mapping id>, in the pipelines the receiver is
// in. A mapping with processors gets, for each such pipeline, a pipeline of
// its own, <signal>/<name>-<mapping id>, whose receiver is the copy, whose
// processors are the mapping's followed by the pipeline's, and whose
// exporters are the pipeline's: so the mapping's processors apply to that
// copy's data only. A copy whose mapping lacks a variable it reads is left
// out; a provider with no mapping renders the receiver zero times.

// receiverCopy is one receiver rendered for one mapping.
type receiverCopy struct {
	placed blueprint.Placed
	name   string             // the copy's id without its type: <name>-<mapping id>
	procs  []blueprint.Placed // the mapping's processors
}

// dynamicOf names the dynamic provider receiver i is rendered per mapping
// of, "" for none.
func (t *Template) dynamicOf(i int, in Input) (string, error) {
	var dyn []string
	for _, p := range t.providers[i] {
		if _, ok := in.Dynamic[p]; ok {
			dyn = append(dyn, p)
		}
	}
	switch len(dyn) {
	case 0:
		return "", nil
	case 1:
		return dyn[0], nil
	}
	slices.Sort(dyn)
	return "", t.errorf(t.plan.Components[i], "", fmt.Sprintf("reads variables of the dynamic providers %s: a receiver follows one dynamic provider",
		strings.Join(dyn, " and ")))
}

// sortedMappings orders mappings by id: the render does not depend on the
// order the provider listed them in.
func sortedMappings(ms []Mapping) []Mapping {
	out := slices.Clone(ms)
	slices.SortFunc(out, func(a, b Mapping) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// copies renders receiver c once per mapping of provider p.
func (t *Template) copies(c blueprint.Placed, p string, in Input, left *int) ([]receiverCopy, []Dropped, error) {
	ms := sortedMappings(in.Dynamic[p])
	if len(ms) == 0 {
		return nil, []Dropped{{Receiver: c.ID, Source: c.Source, Reason: "the dynamic provider " + p + " has no mapping"}}, nil
	}
	typ, name, _ := strings.Cut(c.ID, "/")
	var out []receiverCopy
	var dropped []Dropped
	for _, m := range ms {
		suffix := mappingSuffix(m.ID)
		cp := receiverCopy{name: name + "-" + suffix}
		cp.placed = c
		cp.placed.ID = typ + "/" + cp.name
		cfg, err := t.substitute(c.Config, env{set: vars.FlatMappingSet(in.Context, p, m.Vars), typed: in.mappingTyped(p, m)}, left)
		if errors.Is(err, errValuesOverMax) {
			return nil, nil, &Error{Blueprint: t.id, Component: string(c.Class) + " " + c.ID, Source: c.Source, Reason: err.Error()}
		}
		if missing := (*vars.MissingError)(nil); errors.As(err, &missing) {
			dropped = append(dropped, Dropped{Receiver: cp.placed.ID, Source: c.Source, Variable: missing.Reference})
			continue
		}
		if err != nil {
			dropped = append(dropped, Dropped{Receiver: cp.placed.ID, Source: c.Source, Reason: err.Error()})
			continue
		}
		cp.placed.Config = cfg
		procs, err := mappingProcessors(cp.name, m.Processors)
		if err != nil {
			dropped = append(dropped, Dropped{Receiver: cp.placed.ID, Source: c.Source, Reason: fmt.Sprintf("mapping %q of %s: %v", m.ID, p, err)})
			continue
		}
		cp.procs = procs
		out = append(out, cp)
	}
	return out, dropped, nil
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
