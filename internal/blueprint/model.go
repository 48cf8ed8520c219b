package blueprint

import yaml "go.yaml.in/yaml/v3"

// Class is the pipeline class of a Component.
type Class string

// The five pipeline classes a Component can have.
const (
	ClassReceiver  Class = "receiver"
	ClassProcessor Class = "processor"
	ClassExporter  Class = "exporter"
	ClassConnector Class = "connector"
	ClassExtension Class = "extension"
)

var validClasses = map[Class]bool{
	ClassReceiver: true, ClassProcessor: true, ClassExporter: true,
	ClassConnector: true, ClassExtension: true,
}

// Lane names. The four signal lanes carry the upstream signal names; the
// extensions block and satisfies claims are reported under their own lane
// names in findings.
const (
	LaneTraces     = "traces"
	LaneMetrics    = "metrics"
	LaneLogs       = "logs"
	LaneProfiles   = "profiles"
	LaneExtensions = "extensions"
	LaneSatisfies  = "satisfies"
)

// SignalLanes lists the signal lanes in the order they are judged and
// rendered.
var SignalLanes = []string{LaneTraces, LaneMetrics, LaneLogs, LaneProfiles}

// Origin says where an authored object came from.
type Origin struct {
	Root string // the source root directory as given
	Rel  string // slash-separated path relative to Root, e.g. teams/a/components/x.yaml
	Line int    // line of the object in the file (local Components); 0 for whole files
}

// File is the path of the file, Root joined with Rel.
func (o Origin) File() string { return joinPath(o.Root, o.Rel) }

// Component is one pipeline component: shared (its own file, with an owner)
// or local (inline in a Blueprint, owned by the Blueprint's owner).
type Component struct {
	Name        string
	Class       Class
	Type        string
	Version     int
	Owner       string // empty for local Components
	Description string
	// Config is the component's collector configuration as authored: a
	// standalone YAML mapping node (aliases expanded), never nil. Renders
	// share it, so treat it as read-only.
	Config *yaml.Node

	Team   string // team directory of a shared Component; empty for local
	Origin Origin

	// rid caches RenderedID for loaded Components, which are never
	// modified after the load; empty otherwise.
	rid string
}

// Shared reports whether c is a shared Component.
func (c *Component) Shared() bool { return c.Team != "" }

// ID is the team-qualified id of a shared Component, or the bare name of a
// local one.
func (c *Component) ID() string {
	if c.Shared() {
		return c.Team + "/" + c.Name
	}
	return c.Name
}

// RenderedID is the collector id the Component renders under: shared
// Components as <type>/<team>.<name>, local ones as <type>/<name>.
func (c *Component) RenderedID() string {
	if c.rid != "" {
		return c.rid
	}
	if c.Shared() {
		return c.Type + "/" + c.Team + "." + c.Name
	}
	return c.Type + "/" + c.Name
}

// Ref is a parsed lane reference.
type Ref struct {
	Team string // empty for a local reference
	Name string
	Pin  int  // 0 when unpinned
	Head bool // track: head
}

// Shared reports whether the reference names a shared Component.
func (r Ref) Shared() bool { return r.Team != "" }

// ID is the referenced id without pin.
func (r Ref) ID() string {
	if r.Shared() {
		return r.Team + "/" + r.Name
	}
	return r.Name
}

// Entry is one lane entry of a Blueprint.
type Entry struct {
	Raw  string // the component string as written
	Ref  Ref
	Line int
}

// Lane is an ordered list of entries.
type Lane struct {
	Name    string
	Entries []Entry
}

// Claim is a satisfies claim: a Requirement id stamped with the version the
// claim was made against.
type Claim struct {
	Raw         string
	Requirement string // team-qualified Requirement id
	Version     int
	Line        int
}

// Blueprint is a named, versioned composition of Components.
type Blueprint struct {
	Name        string
	Version     int
	Owner       string
	Description string
	Team        string
	Components  []*Component // local Components in declaration order
	// Lanes holds the signal lanes in SignalLanes order; lanes the file
	// does not mention are present and empty.
	Lanes      []Lane
	Extensions Lane
	Satisfies  []Claim
	Origin     Origin
}

// ID is the team-qualified id <team>/<name>.
func (b *Blueprint) ID() string { return b.Team + "/" + b.Name }

// Local returns the local Component with the given name, or nil.
func (b *Blueprint) Local(name string) *Component {
	for _, c := range b.Components {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Requirement is an authored Requirement; only its id and current version
// matter to Blueprints.
type Requirement struct {
	Name        string
	Version     int
	Owner       string
	Description string
	Team        string
	Origin      Origin
}

// ID is the team-qualified id <team>/<name>.
func (r *Requirement) ID() string { return r.Team + "/" + r.Name }

// Estate is everything loaded from the source roots. It is only ever
// returned whole: a load with any error yields no Estate. An Estate is not
// modified after the load, so Judge and Render may run concurrently.
type Estate struct {
	Roots        []string
	Blueprints   map[string]*Blueprint   // by <team>/<name>
	Components   map[string]*Component   // shared, by <team>/<name>
	Requirements map[string]*Requirement // by <team>/<name>
}
