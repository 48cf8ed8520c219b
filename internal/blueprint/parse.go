package blueprint

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

var (
	componentFields   = []string{"name", "class", "type", "version", "owner", "description", "config"}
	blueprintFields   = []string{"name", "version", "owner", "description", "components", "pipelines", "extensions", "satisfies"}
	requirementFields = []string{"name", "version", "owner", "description"}
	entryFields       = []string{"component", "track"}
)

const (
	laneHint  = "lanes are traces, metrics, logs, profiles (extensions sits beside pipelines)"
	entryHint = "a lane entry has exactly the fields component and track"
)

// parseComponent reads a shared Component file (local=false) or one inline
// entry of a Blueprint's components list (local=true).
func parseComponent(n *yaml.Node, local bool, e errs) *Component {
	what := "Component"
	if local {
		what = "local Component"
	}
	f, ok := mapping(n, what, componentFields, "", e)
	if !ok {
		return nil
	}
	c := &Component{Origin: Origin{Line: n.Line}}
	name, _, ok := str(&f, "name", what, e)
	if local {
		// A shared Component's name is checked against its file name by
		// the caller; a local one has nothing else to name it.
		if !ok || name == "" {
			e.at(n.Line, "local Component is missing required field \"name\"")
		}
		what = "local Component " + strconv.Quote(name)
	}
	c.Name = name

	class, line, ok := str(&f, "class", what, e)
	switch {
	case !ok:
		e.at(n.Line, "%s is missing required field \"class\" (one of receiver, processor, exporter, connector, extension)", what)
	case !validClasses[Class(class)]:
		e.at(line, "%s class %q is not one of receiver, processor, exporter, connector, extension", what, class)
	default:
		c.Class = Class(class)
	}

	typ, line, ok := str(&f, "type", what, e)
	switch {
	case !ok && line == 0:
		e.at(n.Line, "%s is missing required field \"type\"", what)
	case strings.TrimSpace(typ) == "":
		e.at(max(line, n.Line), "%s type must not be empty", what)
	case strings.ContainsAny(typ, "/ \t"):
		e.at(line, "%s type %q must not contain '/' or whitespace", what, typ)
	default:
		c.Type = typ
	}

	c.Version = version(&f, n.Line, what, e)

	owner, line, ok := str(&f, "owner", what, e)
	switch {
	case local && (ok || line > 0):
		e.at(max(line, n.Line), "%s must not set owner: a local Component belongs to its Blueprint's owner", what)
	case !local && (!ok || strings.TrimSpace(owner) == ""):
		e.at(max(line, n.Line), "%s is missing required field \"owner\"", what)
	case !local:
		c.Owner = owner
	}
	c.Description, _, _ = str(&f, "description", what, e)
	c.Config = parseConfig(f.get("config"), what, e)
	return c
}

// maxConfigNodes bounds a config after alias expansion, so that a few
// lines of anchors cannot expand into gigabytes ("billion laughs").
const maxConfigNodes = 100_000

// parseConfig returns a standalone copy of a Component's config mapping:
// aliases expanded, comments and positions dropped, so that it renders
// exactly as authored and can be shared by every render.
func parseConfig(n *yaml.Node, what string, e errs) *yaml.Node {
	if isNull(n) {
		return mapNode()
	}
	if n.Kind != yaml.MappingNode {
		e.at(n.Line, "%s config must be a mapping, got %s", what, describe(n))
		return mapNode()
	}
	budget := maxConfigNodes
	out, problem, line := copyConfig(n, &budget, 0)
	if problem != "" {
		e.at(line, "%s config %s", what, problem)
		return mapNode()
	}
	return out
}

// copyConfig returns a standalone copy of n, or the first problem with its
// line. budget bounds the number of nodes after alias expansion and is
// spent by the copy.
func copyConfig(n *yaml.Node, budget *int, depth int) (*yaml.Node, string, int) {
	before := *budget
	if problem, line := checkConfig(n, budget, depth); problem != "" {
		return nil, problem, line
	}
	// One slab for the nodes and one for the Content slices: a config is
	// kept for the life of the estate, so it should not cost an
	// allocation per node.
	count := before - *budget
	c := configCopier{nodes: make([]yaml.Node, 0, count), ptrs: make([]*yaml.Node, 0, count)}
	return c.copy(n), "", 0
}

// checkConfig walks a config as copy will, in the same order, and returns
// the first problem: an unsupported or repeated key, or too many nodes or
// too deep a nesting once aliases are expanded. budget is left at
// maxConfigNodes minus the number of nodes.
func checkConfig(n *yaml.Node, budget *int, depth int) (string, int) {
	n = deref(n)
	*budget--
	if *budget < 0 || depth > 100 {
		return "is too large or too deeply nested once aliases are expanded", n.Line
	}
	if n.Kind == yaml.MappingNode {
		var seen map[string]bool
		if len(n.Content) > 32 {
			seen = make(map[string]bool, len(n.Content)/2)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				return "has an unsupported key (merge keys and complex keys are not allowed)", k.Line
			}
			if len(n.Content) <= 32 { // a scan beats a map for the usual few keys
				for j := 0; j < i; j += 2 {
					if deref(n.Content[j]).Value == k.Value {
						return fmt.Sprintf("repeats the key %q", k.Value), k.Line
					}
				}
			} else if seen[k.Value] {
				return fmt.Sprintf("repeats the key %q", k.Value), k.Line
			} else {
				seen[k.Value] = true
			}
		}
	}
	for _, child := range n.Content {
		if problem, line := checkConfig(child, budget, depth+1); problem != "" {
			return problem, line
		}
	}
	return "", 0
}

// configCopier copies a checked config into preallocated slabs.
type configCopier struct {
	nodes []yaml.Node
	ptrs  []*yaml.Node
}

func (cc *configCopier) copy(n *yaml.Node) *yaml.Node {
	n = deref(n)
	cc.nodes = append(cc.nodes, yaml.Node{Kind: n.Kind, Style: n.Style, Tag: n.Tag, Value: n.Value})
	c := &cc.nodes[len(cc.nodes)-1]
	if len(n.Content) > 0 {
		off := len(cc.ptrs)
		cc.ptrs = cc.ptrs[:off+len(n.Content)]
		content := cc.ptrs[off:len(cc.ptrs):len(cc.ptrs)]
		for i, child := range n.Content {
			content[i] = cc.copy(child)
		}
		c.Content = content
	}
	return c
}

func parseRequirement(n *yaml.Node, e errs) *Requirement {
	f, ok := mapping(n, "Requirement", requirementFields, "", e)
	if !ok {
		return nil
	}
	r := &Requirement{}
	r.Name, _, _ = str(&f, "name", "Requirement", e)
	r.Version = version(&f, n.Line, "Requirement", e)
	owner, line, ok := str(&f, "owner", "Requirement", e)
	if !ok || strings.TrimSpace(owner) == "" {
		e.at(max(line, n.Line), "Requirement is missing required field \"owner\"")
	}
	r.Owner = owner
	r.Description, _, _ = str(&f, "description", "Requirement", e)
	return r
}

func parseBlueprint(n *yaml.Node, team string, e errs) *Blueprint {
	f, ok := mapping(n, "Blueprint", blueprintFields, "", e)
	if !ok {
		return nil
	}
	b := &Blueprint{Team: team}
	b.Name, _, _ = str(&f, "name", "Blueprint", e)
	b.Version = version(&f, n.Line, "Blueprint", e)
	owner, line, ok := str(&f, "owner", "Blueprint", e)
	if !ok || strings.TrimSpace(owner) == "" {
		e.at(max(line, n.Line), "Blueprint is missing required field \"owner\"")
	}
	b.Owner = owner
	b.Description, _, _ = str(&f, "description", "Blueprint", e)

	// Local Components.
	firstLine := map[string]int{}
	for _, item := range sequence(f.get("components"), "components", e) {
		c := parseComponent(item, true, e)
		if c == nil {
			continue
		}
		if c.Name != "" {
			if prev, dup := firstLine[c.Name]; dup {
				e.at(item.Line, "duplicate local Component %q (first declared at line %d)", c.Name, prev)
				continue
			}
			firstLine[c.Name] = item.Line
		}
		b.Components = append(b.Components, c)
	}

	// Lanes.
	var byLane fields
	if p := f.get("pipelines"); !isNull(p) {
		byLane, _ = mapping(p, "pipelines", SignalLanes, laneHint, e)
	}
	referenced := map[string]bool{}
	total := 0
	for _, lane := range SignalLanes {
		l, items := parseLane(lane, byLane.get(lane), b, referenced, e)
		total += items
		b.Lanes = append(b.Lanes, l)
	}
	// Entries under a misspelled lane name were already reported as an
	// unknown field; read them anyway so that their own problems surface
	// and the Blueprint is not also reported as empty or its local
	// Components as unreferenced.
	if p := f.get("pipelines"); p != nil && p.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(p.Content); i += 2 {
			if k := p.Content[i]; k.Kind == yaml.ScalarNode && !slices.Contains(SignalLanes, k.Value) {
				_, items := parseLane(k.Value, deref(p.Content[i+1]), b, referenced, e)
				total += items
			}
		}
	}
	var items int
	b.Extensions, items = parseLane(LaneExtensions, f.get("extensions"), b, referenced, e)
	total += items
	if total == 0 {
		e.at(n.Line, "Blueprint has no lane entries and no extensions: it would render an empty collector")
	}
	for _, c := range b.Components {
		if c.Name != "" && !referenced[c.Name] {
			e.at(c.Origin.Line, "local Component %q is declared but no lane references it", c.Name)
		}
	}

	// Satisfies claims.
	seen := map[string]int{}
	for _, item := range sequence(f.get("satisfies"), "satisfies", e) {
		if item.Kind != yaml.ScalarNode || isNull(item) {
			e.at(item.Line, "satisfies claim must be a string <requirement-id>@<version>, got %s", describe(item))
			continue
		}
		cl, ok := parseClaim(item.Value, team)
		if !ok {
			e.at(item.Line, "%s", cl.Raw)
			continue
		}
		cl.Line = item.Line
		if prev, dup := seen[cl.Requirement]; dup {
			e.at(item.Line, "satisfies claims Requirement %q twice (first at line %d)", cl.Requirement, prev)
			continue
		}
		seen[cl.Requirement] = item.Line
		b.Satisfies = append(b.Satisfies, cl)
	}
	return b
}

// parseClaim parses "<requirement-id>@<version>"; a bare name is qualified
// with the Blueprint's team. On failure it returns ok=false with the problem
// in Raw.
func parseClaim(s, team string) (Claim, bool) {
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return Claim{Raw: "satisfies claim " + strconv.Quote(s) + " is unversioned: write <requirement-id>@<version> so drift can be detected"}, false
	}
	id, ver := s[:at], s[at+1:]
	v, ok := positiveInt(ver)
	if !ok {
		return Claim{Raw: "satisfies claim " + strconv.Quote(s) + ": version after @ must be a positive integer"}, false
	}
	rteam, name, qualified := strings.Cut(id, "/")
	if !qualified {
		rteam, name = team, id
	}
	if rteam == "" || name == "" || strings.Contains(name, "/") || strings.ContainsAny(id, "@ \t") {
		return Claim{Raw: "satisfies claim " + strconv.Quote(s) + ": Requirement id must be <team>/<name> or <name>"}, false
	}
	return Claim{Raw: s, Requirement: rteam + "/" + name, Version: v}, true
}

// sequence returns the items of a list field; null means empty.
func sequence(n *yaml.Node, what string, e errs) []*yaml.Node {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		e.at(n.Line, "%s must be a list, got %s", what, describe(n))
		return nil
	}
	if !slices.ContainsFunc(n.Content, func(c *yaml.Node) bool { return c.Kind == yaml.AliasNode }) {
		return n.Content // callers only read it
	}
	out := make([]*yaml.Node, 0, len(n.Content))
	for _, c := range n.Content {
		out = append(out, deref(c))
	}
	return out
}

// parseLane reads one lane (or the extensions block) and enforces every
// reference rule that can be decided inside the Blueprint.
// It also returns how many items the lane holds, valid or not.
func parseLane(lane string, n *yaml.Node, b *Blueprint, referenced map[string]bool, e errs) (Lane, int) {
	l := Lane{Name: lane}
	where := "lane " + lane
	if lane == LaneExtensions {
		where = "extensions"
	}
	entryWhat := where + " entry"
	items := sequence(n, where, e)
	// Entries reach l.Entries in the order their ids are first seen, so a
	// repeated id is found by scanning them; long lanes get a map.
	var firstLine map[string]int
	if len(items) > 32 {
		firstLine = make(map[string]int, len(items))
	}
	if len(items) > 0 {
		l.Entries = make([]Entry, 0, len(items))
	}
	for _, item := range items {
		f, ok := mapping(item, entryWhat, entryFields, entryHint, e)
		if !ok {
			continue
		}
		raw, _, ok := str(&f, "component", entryWhat, e)
		if !ok || strings.TrimSpace(raw) == "" {
			e.at(item.Line, "%s entry is missing required field \"component\"", where)
			continue
		}
		head, badTrack := false, false
		if t, tl, ok := str(&f, "track", entryWhat, e); ok {
			if t != "head" {
				e.at(tl, "%s entry %q: track must be \"head\", got %q", where, raw, t)
				badTrack = true
			} else {
				head = true
			}
		} else if tl > 0 {
			e.at(tl, "%s entry %q: track must be \"head\"", where, raw)
			badTrack = true
		}
		ref, problem := parseRef(raw)
		if problem != "" {
			e.at(item.Line, "%s entry %q: %s", where, raw, problem)
			if ref.Name != "" && !ref.Shared() {
				referenced[ref.Name] = true
				if b.Local(ref.Name) == nil {
					e.at(item.Line, "%s entry %q: names no local Component this Blueprint declares", where, raw)
				}
			}
			continue
		}
		ref.Head = head
		switch {
		case badTrack:
			// Already reported; the pin rules depend on what track meant.
		case ref.Shared() && ref.Pin == 0 && !head:
			e.at(item.Line, "%s entry %q: a shared reference must pin a version (%s@N) or set track: head", where, raw, ref.ID())
		case ref.Shared() && ref.Pin != 0 && head:
			e.at(item.Line, "%s entry %q: a shared reference must not both pin a version and set track: head", where, raw)
		case !ref.Shared():
			if head {
				e.at(item.Line, "%s entry %q: a local reference must not set track: head", where, raw)
			}
			if b.Local(ref.Name) == nil {
				e.at(item.Line, "%s entry %q: names no local Component this Blueprint declares", where, raw)
			}
		}
		if !ref.Shared() {
			referenced[ref.Name] = true
		}
		id, _, _ := strings.Cut(raw, "@") // ref.ID(), without building it
		if prev, dup := seenEntry(l.Entries, firstLine, id); dup {
			e.at(item.Line, "%s references %q twice (first at line %d)", where, id, prev)
			continue
		}
		if firstLine != nil {
			firstLine[id] = item.Line
		}
		l.Entries = append(l.Entries, Entry{Raw: raw, Ref: ref, Line: item.Line})
	}
	return l, len(items)
}

// seenEntry returns the line of the entry with the given id, looked up in
// firstLine when there is one, else among entries.
func seenEntry(entries []Entry, firstLine map[string]int, id string) (int, bool) {
	if firstLine != nil {
		line, ok := firstLine[id]
		return line, ok
	}
	for _, en := range entries {
		if eid, _, _ := strings.Cut(en.Raw, "@"); eid == id {
			return en.Line, true
		}
	}
	return 0, false
}

// parseRef parses "<team>/<name>@<pin>", "<team>/<name>" or "<name>". A
// local reference with a pin is reported here; rules that need track or the
// Blueprint are checked by the caller.
func parseRef(s string) (Ref, string) {
	if strings.ContainsAny(s, " \t\r\n") {
		return Ref{}, "a reference is an id (<team>/<name>@<version> or <name>) and must not contain whitespace"
	}
	id, pin, pinned := strings.Cut(s, "@")
	var r Ref
	if team, name, shared := strings.Cut(id, "/"); shared {
		if team == "" || name == "" || strings.Contains(name, "/") {
			return Ref{}, "a shared reference is <team>/<name>@<version>; a reference is an id, never a path"
		}
		r.Team, r.Name = team, name
	} else {
		if id == "" {
			return Ref{}, "a reference must name a Component"
		}
		r.Name = id
		if pinned {
			return r, "a local reference must not carry a pin: a local Component travels with its Blueprint"
		}
	}
	if pinned {
		v, ok := positiveInt(pin)
		if !ok {
			return Ref{}, "the pin after @ must be a positive integer"
		}
		r.Pin = v
	}
	return r, ""
}
