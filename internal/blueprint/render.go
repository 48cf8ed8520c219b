package blueprint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
)

// RefusedError is returned when a Blueprint cannot be rendered faithfully.
// Reasons says why, one line each.
type RefusedError struct {
	Blueprint string
	Reasons   []string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("render of %s refused:\n  %s", e.Blueprint, strings.Join(e.Reasons, "\n  "))
}

var sectionOf = map[Class]string{
	ClassReceiver:  "receivers",
	ClassProcessor: "processors",
	ClassExporter:  "exporters",
	ClassConnector: "connectors",
	ClassExtension: "extensions",
}

var sections = []string{"receivers", "processors", "exporters", "connectors", "extensions"}

// placement is a Component as it will render, with where it came from.
type placement struct {
	comp      *Component
	version   int        // the rendered version
	blueprint *Blueprint // the Blueprint a local Component belongs to
	rid       string     // rendered id
	key       placeKey   // identity: two placements with the same key are the same thing
}

// placeKey identifies what a placement renders: a shared Component at a
// version, or a local Component (team empty) of the rendered Blueprint.
type placeKey struct {
	team, name string
	version    int
}

// origin describes where the placed Component comes from, naming its file;
// only collisions need it, so it is built on demand.
func (p placement) origin() string {
	c := p.comp
	if !c.Shared() {
		return fmt.Sprintf("local Component %q of Blueprint %s (%s:%d)", c.Name, p.blueprint.ID(), c.Origin.File(), c.Origin.Line)
	}
	return fmt.Sprintf("shared Component %s@%d (%s)", c.ID(), p.version, c.Origin.File())
}

// source names the placed Component in render errors: the shared
// Component's id at the rendered version, or the local Component's name.
func (p placement) source() string {
	if p.comp.Shared() {
		return p.comp.ID() + "@" + strconv.Itoa(p.version)
	}
	return p.comp.Name
}

// Render renders the Blueprint with the given id to an OpenTelemetry
// Collector config in YAML: [Estate.Plan] followed by [Plan.YAML].
func (est *Estate) Render(ctx context.Context, id string, hist History) ([]byte, error) {
	p, err := est.Plan(ctx, id, hist)
	if err != nil {
		return nil, err
	}
	return p.YAML(), nil
}

// Plan resolves the Blueprint with the given id into what it renders.
// Shared references pinned behind head render the pinned version, read
// from hist; a nil hist refuses such references. The plan is refused with
// a [*RefusedError] when an entry does not resolve (the reference findings
// are the reasons), when a pinned version cannot be found, or when two
// placed Components render under the same id.
func (est *Estate) Plan(ctx context.Context, id string, hist History) (*Plan, error) {
	b, ok := est.Blueprints[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownBlueprint, id)
	}
	findings, lanes := est.judge(b, false)
	var reasons []string
	for _, f := range findings {
		if f.Kind == KindReference {
			reasons = append(reasons, fmt.Sprintf("[%s] %s", f.Lane, f.Message))
		}
	}
	if len(reasons) > 0 {
		return nil, &RefusedError{Blueprint: id, Reasons: reasons}
	}

	// Place every entry, fetching pinned versions behind head.
	var pinned map[string]*Component // by "<id>@<pin>", made when needed
	total := 0
	for _, lane := range lanes {
		total += len(lane)
	}
	all := make([]placement, total) // one backing array for every lane
	placements := make([][]placement, len(lanes))
	off := 0
	for li, lane := range lanes {
		placements[li] = all[off : off : off+len(lane)]
		off += len(lane)
		for _, p := range lane {
			pl, err := est.place(ctx, b, p, hist, &pinned)
			if err != nil {
				reasons = append(reasons, fmt.Sprintf("[%s] %v", p.Lane, err))
				continue
			}
			placements[li] = append(placements[li], pl)
		}
	}
	if len(reasons) > 0 {
		return nil, &RefusedError{Blueprint: id, Reasons: reasons}
	}

	// Detect rendered-id collisions, keeping first-appearance order.
	// A Blueprint places a few dozen Components at most, so a scan of
	// those seen finds a rendered id faster than a map; large ones get one.
	var byID map[string]int
	if total > 32 {
		byID = make(map[string]int, total)
	}
	order := make([]placement, 0, total) // distinct ids, first appearance first
	for _, lane := range placements {
		for _, pl := range lane {
			rid := pl.rid
			at := -1
			if byID != nil {
				if i, ok := byID[rid]; ok {
					at = i
				}
			} else {
				at = slices.IndexFunc(order, func(o placement) bool { return o.rid == rid })
			}
			switch {
			case at < 0:
				if byID != nil {
					byID[rid] = len(order)
				}
				order = append(order, pl)
			case order[at].key != pl.key:
				prev := order[at]
				r := fmt.Sprintf("rendered id %q collides: %s and %s", rid, prev.origin(), pl.origin())
				if !slices.Contains(reasons, r) {
					reasons = append(reasons, r)
				}
			}
		}
	}
	if len(reasons) > 0 {
		return nil, &RefusedError{Blueprint: id, Reasons: reasons}
	}

	p := &Plan{Blueprint: id, Components: make([]Placed, len(order))}
	for i, pl := range order {
		p.Components[i] = Placed{ID: pl.rid, Class: pl.comp.Class, Type: pl.comp.Type, Source: pl.source(), Config: pl.comp.Config}
	}
	p.Extensions = laneIDs(placements[len(placements)-1], partAll)
	for li, lane := range placements[:len(placements)-1] {
		if len(lane) == 0 {
			continue
		}
		p.Pipelines = append(p.Pipelines, Pipeline{
			Name:       b.Lanes[li].Name,
			Receivers:  laneIDs(lane, partReceivers),
			Processors: laneIDs(lane, partProcessors),
			Exporters:  laneIDs(lane, partExporters),
		})
	}
	return p, nil
}

var renderBufs = sync.Pool{New: func() any { return new(emitBuf) }}

// place decides which version of an entry's Component renders.
func (est *Estate) place(ctx context.Context, b *Blueprint, p placed, hist History, cache *map[string]*Component) (placement, error) {
	c := p.Comp
	if !c.Shared() {
		return placement{comp: c, version: c.Version, key: placeKey{name: c.Name}, rid: c.RenderedID(), blueprint: b}, nil
	}
	v := c.Version
	if pin := p.Entry.Ref.Pin; pin != 0 && pin < c.Version {
		k := c.ID() + "@" + strconv.Itoa(pin)
		old, ok := (*cache)[k]
		if !ok {
			var err error
			old, err = pinnedVersion(ctx, c, pin, hist)
			if err != nil {
				return placement{}, err
			}
			if *cache == nil {
				*cache = map[string]*Component{}
			}
			(*cache)[k] = old
		}
		c, v = old, pin
	}
	return placement{comp: c, version: v, key: placeKey{team: c.Team, name: c.Name, version: v}, rid: c.RenderedID()}, nil
}

// Which ids of a lane laneIDs returns.
const (
	partReceivers = iota
	partProcessors
	partExporters
	partAll
)

// laneIDs returns the rendered ids of one part of a lane: a connector
// before the lane's first processor or exporter acts as a receiver, after
// it as an exporter.
func laneIDs(lane []placement, part int) []string {
	var out []string
	past := false // past the lane's first processor or exporter
	for _, pl := range lane {
		in := part == partAll
		switch pl.comp.Class {
		case ClassReceiver:
			in = in || part == partReceivers
		case ClassProcessor:
			past = true
			in = in || part == partProcessors
		case ClassExporter:
			past = true
			in = in || part == partExporters
		case ClassConnector:
			in = in || (past && part == partExporters) || (!past && part == partReceivers)
		}
		if in {
			out = append(out, pl.rid)
		}
	}
	return out
}

// pinnedVersion finds the Component file from the newest commit in which it
// had version pin.
func pinnedVersion(ctx context.Context, head *Component, pin int, hist History) (*Component, error) {
	what := fmt.Sprintf("%s is pinned at version %d behind head (%d)", head.ID(), pin, head.Version)
	if hist == nil {
		return nil, fmt.Errorf("%s and no history is available to read it from", what)
	}
	var found *Component
	var loadErr error
	err := hist.Revisions(ctx, head.Origin.Root, head.Origin.Rel, func(commit string, content []byte) bool {
		var list LoadErrors
		e := errs{file: head.Origin.File() + "@" + commit[:min(12, len(commit))], list: &list}
		top := parseDocument(content, e)
		if top == nil {
			return true
		}
		c := parseComponent(top, false, e)
		if c == nil || c.Version != pin {
			return true
		}
		if len(list) > 0 {
			loadErr = fmt.Errorf("%s, and its version %d at commit %s does not load: %w", what, pin, commit, list)
			return false
		}
		c.Team, c.Origin = head.Team, head.Origin
		found = c
		return false
	})
	switch {
	case errors.Is(err, ErrNotVersioned):
		return nil, fmt.Errorf("%s, and version %d cannot be read: %w", what, pin, err)
	case err != nil:
		return nil, fmt.Errorf("%s: reading Git history: %w", what, err)
	case loadErr != nil:
		return nil, loadErr
	case found == nil:
		return nil, fmt.Errorf("%s, and no commit of %s has version %d", what, head.Origin.File(), pin)
	case found.Name != head.Name:
		return nil, fmt.Errorf("%s, and version %d at that path is named %q", what, pin, found.Name)
	}
	return found, nil
}

func mapNode() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"} }
