package blueprint

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// placed is a lane entry tied to the Component it resolves to at head.
type placed struct {
	Lane  string
	Entry Entry
	// Comp is the head (or local) Component; nil when the entry does not
	// resolve.
	Comp *Component
}

// Judge returns every finding of every Blueprint, ordered by Blueprint id
// and, within a Blueprint, by lane and entry.
func (est *Estate) Judge() []Finding {
	ids := est.BlueprintIDs()
	// Blueprints are judged independently, so spread them over the CPUs;
	// the results are joined in id order.
	per := make([][]Finding, len(ids))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), (len(ids)+63)/64) {
		wg.Go(func() {
			for {
				end := int(next.Add(64))
				start := end - 64
				if start >= len(ids) {
					return
				}
				for i := start; i < min(end, len(ids)); i++ {
					per[i], _ = est.judge(est.Blueprints[ids[i]], true)
				}
			}
		})
	}
	wg.Wait()
	var out []Finding
	for _, fs := range per {
		out = append(out, fs...)
	}
	return out
}

// JudgeBlueprint returns the findings about one Blueprint.
func (est *Estate) JudgeBlueprint(id string) ([]Finding, error) {
	b, ok := est.Blueprints[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownBlueprint, id)
	}
	fs, _ := est.judge(b, true)
	return fs, nil
}

// judge returns the Blueprint's findings and its lanes (extensions block
// last) with each entry resolved. Without full it only resolves, which is
// all a render needs: ordering and claims never block a render.
func (est *Estate) judge(b *Blueprint, full bool) ([]Finding, [][]placed) {
	var out []Finding
	add := func(kind, lane, format string, args ...any) {
		out = append(out, Finding{Kind: kind, Blueprint: b.ID(), Lane: lane, Owner: b.Owner, Message: fmt.Sprintf(format, args...)})
	}
	lanes := make([]Lane, 0, len(b.Lanes)+1)
	lanes = append(append(lanes, b.Lanes...), b.Extensions)
	total := 0
	for _, lane := range lanes {
		total += len(lane.Entries)
	}
	all := make([]placed, total) // one backing array for every lane
	resolved := make([][]placed, len(lanes))
	off := 0
	for li, lane := range lanes {
		resolved[li] = all[off : off : off+len(lane.Entries)]
		off += len(lane.Entries)
		for _, en := range lane.Entries {
			c := est.resolve(b, lane.Name, en, add)
			resolved[li] = append(resolved[li], placed{Lane: lane.Name, Entry: en, Comp: c})
		}
		if full && lane.Name != LaneExtensions {
			judgeOrdering(resolved[li], lane.Name, add)
		}
	}
	if !full {
		return out, resolved
	}
	judgeVariables(b, resolved, add)
	for _, cl := range b.Satisfies {
		r, ok := est.Requirements[cl.Requirement]
		switch {
		case !ok:
			add(KindReference, LaneSatisfies, "satisfies claim %q names Requirement %s, which does not exist", cl.Raw, cl.Requirement)
		case cl.Version < r.Version:
			add(KindLibraryDrift, LaneSatisfies, "satisfies claim %q is stamped at version %d, behind Requirement %s's current version %d", cl.Raw, cl.Version, cl.Requirement, r.Version)
		case cl.Version > r.Version:
			add(KindReference, LaneSatisfies, "satisfies claim %q is stamped at version %d, ahead of Requirement %s's current version %d", cl.Raw, cl.Version, cl.Requirement, r.Version)
		}
	}
	return out, resolved
}

// resolve ties one entry to its Component and reports reference and
// library_drift findings. It returns nil when the entry does not resolve.
func (est *Estate) resolve(b *Blueprint, lane string, en Entry, add func(kind, lane, format string, args ...any)) *Component {
	var c *Component
	if !en.Ref.Shared() {
		c = b.Local(en.Ref.Name)
		if c == nil { // the loader refuses this; stay safe for hand-built estates
			add(KindReference, lane, "%q names no local Component of this Blueprint", en.Raw)
			return nil
		}
	} else {
		c = est.Components[refID(en)]
		switch {
		case c == nil:
			add(KindReference, lane, "shared Component %s does not exist: it was never authored or has been retracted", en.Ref.ID())
			return nil
		case en.Ref.Pin > c.Version:
			add(KindReference, lane, "%q pins version %d, ahead of team %s's current version %d of %s", en.Raw, en.Ref.Pin, c.Team, c.Version, c.ID())
			return nil
		case en.Ref.Pin != 0 && en.Ref.Pin < c.Version:
			add(KindLibraryDrift, lane, "%q is pinned at version %d, behind team %s's current version %d of %s", en.Raw, en.Ref.Pin, c.Team, c.Version, c.ID())
		}
	}
	switch {
	case lane == LaneExtensions && c.Class != ClassExtension:
		add(KindReference, lane, "%q is a %s, not an extension: only extensions belong in the extensions block", en.Raw, c.Class)
	case lane != LaneExtensions && c.Class == ClassExtension:
		add(KindReference, lane, "%q is an extension: extensions are collector-wide and belong in the extensions block, never in lane %s", en.Raw, lane)
	}
	return c
}

// judgeOrdering applies orderingRules to one signal lane, among entries of
// the same class, skipping entries that do not resolve.
func judgeOrdering(lane []placed, laneName string, add func(kind, lane, format string, args ...any)) {
	for _, p := range lane {
		if p.Comp == nil {
			continue
		}
		for _, rule := range orderingRules {
			if p.Comp.Type != rule.Type {
				continue
			}
			// The peers are the resolved entries of p's class; p's place
			// among them is that of the first entry written like p.
			class := p.Comp.Class
			first, pos := -1, -1
			for i, q := range lane {
				if q.Comp == nil || q.Comp.Class != class {
					continue
				}
				if first < 0 {
					first = i
				}
				if q.Entry.Raw == p.Entry.Raw {
					pos = i
					break
				}
			}
			if rule.First && pos != first {
				add(KindOrdering, laneName, "%s %q must be the first %s in lane %s but comes after %q: %s",
					rule.Type, p.Entry.Raw, class, laneName, lane[first].Entry.Raw, rule.FirstWhy)
			}
			for _, later := range lane[pos+1:] {
				if later.Comp == nil || later.Comp.Class != class {
					continue
				}
				for _, pre := range rule.After {
					if later.Comp.Type == pre.Type {
						add(KindOrdering, laneName, "%s %q must come after %s %q in lane %s: %s",
							rule.Type, p.Entry.Raw, pre.Type, later.Entry.Raw, laneName, pre.Why)
					}
				}
			}
		}
	}
}

// refID is en.Ref.ID() of a shared reference, taken from the entry as
// written when it spells the id (as every loaded entry does) rather than
// built anew for every lookup.
func refID(en Entry) string {
	id, _, _ := strings.Cut(en.Raw, "@")
	t, n := en.Ref.Team, en.Ref.Name
	if len(id) == len(t)+1+len(n) && id[len(t)] == '/' && id[:len(t)] == t && id[len(t)+1:] == n {
		return id
	}
	return en.Ref.ID()
}
