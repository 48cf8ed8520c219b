package configrender

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/blueprint"
	"github.com/myriarch/myriarch/internal/vars"
)

// MaxBody bounds a rendered configuration (and the Blueprint's own render
// before substitution): a collector configuration of more than 4 MiB is a
// mistake, and every byte of it is stored and sent to each collector.
const MaxBody = 4 << 20

// Context is a collector's render context: variable name ("site.id",
// "host.name", "labels.wave", …) to value.
type Context map[string]string

// Template is a Blueprint compiled for rendering with many contexts. It is
// immutable and safe for concurrent use.
type Template struct {
	id     string
	plan   *blueprint.Plan
	source []byte
	// subs are the scalars with references, by node in the plan's Config
	// trees.
	subs map[*yaml.Node]sub
	// withSubs marks the Components (by plan index) that have any;
	// providers lists, per Component, the providers its variables read.
	withSubs  []bool
	providers [][]string
	// vars are the variables any template reads, sorted and distinct: a
	// render depends on the context only through them.
	vars []string
}

type sub struct {
	tpl    *vars.Template
	whole  bool // the scalar is exactly one reference
	quoted bool // the scalar was quoted in the Blueprint: always a string
	key    bool // the scalar is a mapping key: always a string
}

// Compile resolves the Blueprint with the given id (pinned versions read
// from hist) and parses every reference in its Components' configuration.
// A Blueprint that cannot render for any collector is an *Error, or the
// estate's own error (unknown Blueprint, refused plan).
func Compile(est *blueprint.Estate, id string, hist blueprint.History) (*Template, error) {
	plan, err := est.Plan(context.Background(), id, hist)
	if err != nil {
		return nil, err
	}
	t := &Template{id: id, plan: plan, subs: map[*yaml.Node]sub{}, withSubs: make([]bool, len(plan.Components)),
		providers: make([][]string, len(plan.Components))}
	var errs []error
	seen := map[string]bool{}
	for i, c := range plan.Components {
		if c.Class == blueprint.ClassExtension && c.Type == "opamp" {
			errs = append(errs, t.errorf(c, "", "the opamp extension belongs to the Supervisor (a remote configuration that sets it breaks the connection): remove it from the Blueprint"))
			continue
		}
		walkValues(c.Config, "", func(n *yaml.Node, path string, key bool) {
			if !strings.Contains(n.Value, "${") {
				return
			}
			tpl, err := vars.Parse(n.Value)
			if err != nil {
				errs = append(errs, t.errorf(c, "", fmt.Sprintf("%s: %v", path, err)))
				return
			}
			refs := tpl.References()
			if len(refs) == 0 {
				return
			}
			for _, r := range refs {
				for _, a := range r.Alts {
					if !a.Const {
						seen[strings.Join(a.Path, ".")] = true
						if !slices.Contains(t.providers[i], a.Path[0]) {
							t.providers[i] = append(t.providers[i], a.Path[0])
						}
					}
				}
			}
			t.subs[n] = sub{tpl: tpl, whole: len(refs) == 1 && refs[0].Source == n.Value, key: key,
				quoted: n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0}
			t.withSubs[i] = true
		})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if t.source, err = plan.YAMLWithin(MaxBody); err != nil {
		return nil, &Error{Blueprint: id, Reason: fmt.Sprintf("renders over the %d-byte (4 MiB) limit before substitution", MaxBody)}
	}
	for v := range seen {
		t.vars = append(t.vars, v)
	}
	slices.Sort(t.vars)
	return t, nil
}

// ID is the Blueprint's id.
func (t *Template) ID() string { return t.id }

// Source is the Blueprint rendered without substitution, what telecraft
// render prints without a context: a render depends on the Blueprint only
// through it.
func (t *Template) Source() []byte { return t.source }

// Variables lists the variables the Blueprint reads, sorted.
func (t *Template) Variables() []string { return slices.Clone(t.vars) }

// References lists the Blueprint's distinct references (by their text),
// sorted by it: each with its alternatives.
func (t *Template) References() []*vars.Reference {
	seen := map[string]bool{}
	var out []*vars.Reference
	for _, s := range t.subs {
		for _, r := range s.tpl.References() {
			if !seen[r.Source] {
				seen[r.Source] = true
				out = append(out, r)
			}
		}
	}
	slices.SortFunc(out, func(a, b *vars.Reference) int { return strings.Compare(a.Source, b.Source) })
	return out
}

// Key identifies what a render of in depends on: inputs with equal keys
// render the same document. The order of mappings, variables no template
// reads and anything of providers no receiver reads do not count.
func (t *Template) Key(in Input) string {
	var b strings.Builder
	for _, v := range t.vars {
		writeKeyValue(&b, in.Context, in.Types, v)
	}
	for _, p := range t.dynamicProviders(in) {
		ms := sortedMappings(in.Dynamic[p])
		fmt.Fprintf(&b, "\x02%s:%d", p, len(ms))
		for _, m := range ms {
			fmt.Fprintf(&b, "\x03%d:%s", len(m.ID), m.ID)
			for _, v := range t.vars {
				if strings.HasPrefix(v, p+".") {
					writeKeyValue(&b, m.Vars, m.Types, v)
				}
			}
			if len(m.Processors) > 0 {
				procs, _ := json.Marshal(m.Processors)
				fmt.Fprintf(&b, "\x04%d:%s", len(procs), procs)
			}
		}
	}
	return b.String()
}

func writeKeyValue(b *strings.Builder, m map[string]string, types map[string]string, k string) {
	val, ok := m[k]
	if !ok {
		b.WriteByte(0)
		return
	}
	b.WriteByte(1)
	if types[k] != "" {
		b.WriteString(types[k]) // a typed value renders unlike the same string
	}
	fmt.Fprintf(b, "%d:", len(val))
	b.WriteString(val)
}

// dynamicProviders are the providers of in.Dynamic some receiver reads, sorted.
func (t *Template) dynamicProviders(in Input) []string {
	var out []string
	for i, c := range t.plan.Components {
		if c.Class != blueprint.ClassReceiver {
			continue
		}
		for _, p := range t.providers[i] {
			if _, ok := in.Dynamic[p]; ok && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Result is one render.
type Result struct {
	Body    []byte
	Dropped []Dropped
}

// Render substitutes in into the Blueprint. Errors are *Error.
func (t *Template) Render(in Input) (*Result, error) {
	ctx := env{set: vars.FlatSet(in.Context), typed: in.typed}
	plan := *t.plan
	plan.Components = slices.Clone(t.plan.Components)
	var dropped []Dropped
	gone := map[string]bool{}
	var copies map[string][]receiverCopy
	left := MaxBody
	for i, c := range plan.Components {
		if !t.withSubs[i] {
			continue
		}
		if c.Class == blueprint.ClassReceiver {
			if dyn := t.dynamicOf(i, in); len(dyn) > 0 {
				cs, ds, err := t.copies(c, dyn, in, &left)
				if err != nil {
					return nil, err
				}
				dropped = append(dropped, ds...)
				if copies == nil {
					copies = map[string][]receiverCopy{}
				}
				copies[c.ID] = cs
				if len(cs) == 0 {
					gone[c.ID] = true
				}
				continue
			}
		}
		var missing *vars.MissingError
		cfg, err := t.substitute(c.Config, ctx, &left)
		var collision *keyCollisionError
		switch {
		case errors.Is(err, errValuesOverMax), errors.As(err, &collision):
			return nil, t.errorf(c, "", err.Error())
		case err == nil:
			plan.Components[i].Config = cfg
		case errors.As(err, &missing) && c.Class == blueprint.ClassReceiver:
			dropped = append(dropped, Dropped{Receiver: c.ID, Source: c.Source, Variable: missing.Reference})
			gone[c.ID] = true
		case errors.As(err, &missing):
			return nil, &Error{Blueprint: t.id, Component: string(c.Class) + " " + c.ID, Source: c.Source, Variable: missing.Reference,
				Reason: fmt.Sprintf("%s is not in the collector's context (only a receiver is dropped for a missing variable)", missing.Reference)}
		default:
			return nil, t.errorf(c, "", err.Error())
		}
	}
	if len(copies) > 0 {
		if err := t.placeCopies(&plan, copies); err != nil {
			return nil, err
		}
	}
	if len(gone) > 0 || len(copies) > 0 {
		prune(&plan, gone)
		if len(t.plan.Pipelines) > 0 && len(plan.Pipelines) == 0 {
			return nil, &Error{Blueprint: t.id, Reason: "every pipeline lost its receivers, so the collector would collect nothing: " + listDropped(dropped)}
		}
	}
	body, err := plan.YAMLWithin(MaxBody)
	if err != nil {
		return nil, &Error{Blueprint: t.id, Reason: fmt.Sprintf("the rendered configuration is over the %d-byte (4 MiB) limit", MaxBody)}
	}
	return &Result{Body: body, Dropped: dropped}, nil
}

// listDropped names what a render dropped, at most a few.
func listDropped(ds []Dropped) string {
	var b strings.Builder
	for i, d := range ds {
		if i == 4 {
			fmt.Fprintf(&b, "; and %d more", len(ds)-4)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(d.String())
	}
	return b.String()
}

func (t *Template) errorf(c blueprint.Placed, variable, reason string) *Error {
	return &Error{Blueprint: t.id, Component: string(c.Class) + " " + c.ID, Source: c.Source, Variable: variable, Reason: reason}
}
