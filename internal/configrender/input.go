package configrender

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Input is what a render reads: the collector's context and the mappings
// of the dynamic providers of its host.
type Input struct {
	Context Context
	// Types names the context's variables that are not strings: "number"
	// or "bool" (a provider's JSON value). Every other variable — all of
	// the attribute view — is a string and renders as one.
	Types map[string]string
	// Dynamic holds each dynamic provider's mappings. A provider that is
	// present with no mapping renders its receivers zero times.
	Dynamic map[string][]Mapping
}

// Variable types other than string.
const (
	TypeNumber = "number"
	TypeBool   = "bool"
)

func (in Input) typed(name string) bool { return in.Types[name] != "" }

// mappingTyped is whether a variable is typed when a copy renders for
// mapping m of provider p: the mapping's for p's variables, the context's
// for the others.
func (in Input) mappingTyped(p string, m Mapping) func(string) bool {
	return func(name string) bool {
		if strings.HasPrefix(name, p+".") {
			return m.Types[name] != ""
		}
		return in.typed(name)
	}
}

// Mapping is one mapping of a dynamic provider: a receiver that reads the
// provider's variables is rendered once per mapping.
type Mapping struct {
	// ID identifies the mapping within its provider; it names the copy.
	ID string `json:"id"`
	// Vars are the mapping's variables, keyed like the context under the
	// provider's name ("docker.container.name").
	Vars map[string]string `json:"mapping"`
	// Types names the mapping's variables that are not strings (see
	// Input.Types).
	Types map[string]string `json:"types,omitempty"`
	// Processors apply to the copy's data only: {"add_fields": {"target":
	// T, "fields": {…}}} becomes a resource processor upserting T.<field>;
	// no other type is rendered (see processors.go).
	Processors []any `json:"processors,omitempty"`
}

// Document is the JSON form of an Input, what GET
// /api/v1/agents/{uid}/context answers and telecraft render --context
// reads: {"context": {name: value}, "dynamic": {provider: [mapping]}} with
// "source" saying where the context came from ("attributes" or
// "attributes+updater") and "types" naming the variables that are numbers
// or booleans (everything else is a string). A flat object of names to
// strings is read as a context alone.
type Document struct {
	Context Context              `json:"context"`
	Types   map[string]string    `json:"types,omitempty"`
	Dynamic map[string][]Mapping `json:"dynamic"`
	Source  string               `json:"source,omitempty"`
}

// Input returns the document's input.
func (d Document) Input() Input { return Input{Context: d.Context, Types: d.Types, Dynamic: d.Dynamic} }

// ParseDocument reads a context document, structured or flat.
func ParseDocument(data []byte) (Document, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return Document{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if m == nil {
		return Document{}, errors.New("not a JSON object: got null")
	}
	if raw, ok := m["context"]; ok && strings.HasPrefix(strings.TrimSpace(string(raw)), "{") {
		var d Document
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			return Document{}, fmt.Errorf("context document: %w", err)
		}
		if d.Context == nil {
			d.Context = Context{}
		}
		var bad []string
		for k, ty := range d.Types {
			if ty != TypeNumber && ty != TypeBool {
				bad = append(bad, fmt.Sprintf("types.%s is %q, not number or bool", k, ty))
			}
		}
		for p, ms := range d.Dynamic {
			seen := map[string]bool{}
			for i, mp := range ms {
				for k, ty := range mp.Types {
					if ty != TypeNumber && ty != TypeBool {
						bad = append(bad, fmt.Sprintf("dynamic.%s[%d].types.%s is %q, not number or bool", p, i, k, ty))
					}
				}
				switch {
				case mp.ID == "":
					bad = append(bad, fmt.Sprintf("dynamic.%s[%d] has no id", p, i))
				case seen[mp.ID]:
					bad = append(bad, fmt.Sprintf("dynamic.%s[%d]: duplicate id %q", p, i, mp.ID))
				}
				seen[mp.ID] = true
			}
		}
		if len(bad) > 0 {
			sort.Strings(bad)
			return Document{}, errors.New(strings.Join(bad, "; "))
		}
		return d, nil
	}
	ctx := make(Context, len(m))
	var bad []string
	for k, v := range m {
		var s string
		if err := json.Unmarshal(v, &s); err != nil || strings.TrimSpace(string(v)) == "null" {
			bad = append(bad, fmt.Sprintf("%q is %s, not a string", k, strings.TrimSpace(string(v))))
			continue
		}
		ctx[k] = s
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return Document{}, errors.New(strings.Join(bad, "; "))
	}
	return Document{Context: ctx}, nil
}
