package configrender

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Input is what a render reads: the collector's context and the mappings
// of the dynamic providers of its host (seed 001).
type Input struct {
	Context Context
	// Dynamic holds each dynamic provider's mappings. A provider that is
	// present with no mapping renders its receivers zero times.
	Dynamic map[string][]Mapping
}

// Mapping is one mapping of a dynamic provider: a receiver that reads the
// provider's variables is rendered once per mapping.
type Mapping struct {
	// ID identifies the mapping within its provider; it names the copy.
	ID string `json:"id"`
	// Vars are the mapping's variables, keyed like the context under the
	// provider's name ("docker.container.name").
	Vars map[string]string `json:"mapping"`
	// Processors apply to the copy's data only: {"add_fields": {"target":
	// T, "fields": {…}}} becomes a resource processor upserting T.<field>;
	// no other type is rendered (see processors.go).
	Processors []any `json:"processors,omitempty"`
}

// Document is the JSON form of an Input, what GET
// /api/v1/agents/{uid}/context answers and telecraft render --context
// reads: {"context": {name: value}, "dynamic": {provider: [mapping]}} with
// "source" saying where the context came from ("attributes" or
// "attributes+updater"). A flat object of names to strings is read as
// a context alone.
type Document struct {
	Context Context              `json:"context"`
	Dynamic map[string][]Mapping `json:"dynamic"`
	Source  string               `json:"source,omitempty"`
}

// Input returns the document's input.
func (d Document) Input() Input { return Input{Context: d.Context, Dynamic: d.Dynamic} }

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
		for p, ms := range d.Dynamic {
			seen := map[string]bool{}
			for i, mp := range ms {
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
