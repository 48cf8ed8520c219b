package blueprint

import (
	"fmt"
	"slices"
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
	var out []Finding
	for _, id := range ids {
		fs, _ := est.judge(est.Blueprints[id], true)
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
	lanes := append(slices.Clone(b.Lanes), b.Extensions)
	resolved := make([][]placed, len(lanes))
	for li, lane := range lanes {
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
		c = est.Components[en.Ref.ID()]
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
			peers := sameClass(lane, p.Comp.Class)
			pos := slices.IndexFunc(peers, func(q placed) bool { return q.Entry.Raw == p.Entry.Raw })
			if rule.First && pos > 0 {
				add(KindOrdering, laneName, "%s %q must be the first %s in lane %s but comes after %q: %s",
					rule.Type, p.Entry.Raw, p.Comp.Class, laneName, peers[0].Entry.Raw, rule.FirstWhy)
			}
			for _, later := range peers[pos+1:] {
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

func sameClass(lane []placed, class Class) []placed {
	var out []placed
	for _, p := range lane {
		if p.Comp != nil && p.Comp.Class == class {
			out = append(out, p)
		}
	}
	return out
}
