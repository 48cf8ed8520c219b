package vars

import (
	"cmp"
	"fmt"
	"slices"
)

// Mapping is one key/value set of a dynamic provider: rendering an input
// against it merges Vars under the provider's name into the context.
type Mapping struct {
	Provider string `json:"provider"`
	// ID identifies the mapping within its provider; it suffixes the ids of
	// the inputs rendered for it.
	ID       string         `json:"id"`
	Priority int            `json:"priority"`
	Vars     map[string]any `json:"vars"`
	// Processors are prepended, verbatim, to an input that used a variable
	// of this provider.
	Processors []any `json:"processors,omitempty"`
}

// SetName is how dropped entries name the mapping's vars set.
func (m *Mapping) SetName() string { return m.Provider + "-" + m.ID }

// ContextSet is the name of the context-only vars set.
const ContextSet = "context"

// Data is the provider data a render reads: the context (provider name →
// object) and the dynamic mappings in rendering order. Build it with NewData;
// it is immutable afterwards and safe for concurrent use.
type Data struct {
	context  map[string]any
	mappings []Mapping
	// byProvider indexes mappings per provider, in rendering order.
	byProvider map[string][]int
}

// NewData normalizes and validates provider data. Context values must be
// objects; dotted keys are nested at every level. Mappings are ordered by priority (lower
// first), then provider name, keeping each provider's own order; a mapping
// needs a provider name and an id unique within its provider.
func NewData(context map[string]any, mappings []Mapping) (*Data, error) {
	d := &Data{context: map[string]any{}, byProvider: map[string][]int{}}
	raw := make(map[string]any, len(context))
	for name, v := range context {
		n, err := normalize(v, "context."+name)
		if err != nil {
			return nil, err
		}
		raw[name] = n
	}
	// Nesting the whole context makes {"local.app": {...}} and
	// {"local": {"app.name": ...}} reachable alike.
	for name, n := range Nest(raw).(map[string]any) {
		if n == nil {
			n = map[string]any{}
		}
		if _, ok := n.(map[string]any); !ok {
			return nil, &RenderError{Path: "context." + name, Msg: fmt.Sprintf("provider data must be an object, got %s", typeName(n))}
		}
		d.context[name] = n
	}
	ms := make([]Mapping, len(mappings))
	seen := map[[2]string]bool{}
	for i, m := range mappings {
		where := fmt.Sprintf("mappings[%d]", i)
		if m.Provider == "" {
			return nil, &RenderError{Path: where, Msg: "mapping has no provider name"}
		}
		if m.ID == "" {
			return nil, &RenderError{Path: where, Msg: "mapping has no id"}
		}
		key := [2]string{m.Provider, m.ID}
		if seen[key] {
			return nil, &RenderError{Path: where, Msg: fmt.Sprintf("duplicate mapping id %q for provider %q", m.ID, m.Provider)}
		}
		seen[key] = true
		n, err := normalize(m.Vars, where+".vars")
		if err != nil {
			return nil, err
		}
		vars, _ := Nest(n).(map[string]any)
		if vars == nil {
			vars = map[string]any{}
		}
		procs, err := normalize(m.Processors, where+".processors")
		if err != nil {
			return nil, err
		}
		pl, _ := procs.([]any)
		ms[i] = Mapping{Provider: m.Provider, ID: m.ID, Priority: m.Priority, Vars: vars, Processors: pl}
	}
	slices.SortStableFunc(ms, func(a, b Mapping) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.Provider, b.Provider))
	})
	d.mappings = ms
	for i, m := range ms {
		d.byProvider[m.Provider] = append(d.byProvider[m.Provider], i)
	}
	return d, nil
}

// Mappings returns the mappings in rendering order.
func (d *Data) Mappings() []Mapping { return d.mappings }

// Context returns the normalized context.
func (d *Data) Context() map[string]any { return d.context }

// isDynamic reports whether provider has at least one mapping; a provider
// without mappings is like an unknown one.
func (d *Data) isDynamic(provider string) bool { return len(d.byProvider[provider]) > 0 }

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a bool"
	case int64, uint64:
		return "an integer"
	case float64:
		return "a float"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// orEmpty lets a nil *Data mean "no provider data".
func orEmpty(d *Data) *Data {
	if d != nil {
		return d
	}
	return &Data{context: map[string]any{}, byProvider: map[string][]int{}}
}
