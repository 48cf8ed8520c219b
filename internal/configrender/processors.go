package configrender

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	yaml "go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/blueprint"
	"github.com/myriarch/myriarch/internal/providerwire"
)

// A mapping's processors are checked by providerwire.CheckProcessor: only
// add_fields is rendered (see there why).

// mappingProcessors turns a mapping's processors into processor
// Components named resource/<copy name>[-<n>]. Every string of their
// configuration, keys included, is made literal for the collector.
func mappingProcessors(copyName string, list []any) ([]blueprint.Placed, error) {
	var out []blueprint.Placed
	for j, entry := range list {
		if err := providerwire.CheckProcessor(entry); err != nil {
			return nil, fmt.Errorf("processors[%d]: %w", j, err)
		}
		target, fields, _ := providerwire.AddFieldsOf(entry.(map[string]any)[providerwire.ProcessorAddFields]) // checked above
		cfg := addFields(target, fields)
		var node yaml.Node
		if err := node.Encode(literal(cfg)); err != nil {
			return nil, fmt.Errorf("processors[%d]: %w", j, err)
		}
		id := "resource/" + copyName
		if len(list) > 1 {
			id += fmt.Sprintf("-%d", j)
		}
		out = append(out, blueprint.Placed{ID: id, Class: blueprint.ClassProcessor, Type: "resource", Source: "mapping processor", Config: &node})
	}
	return out, nil
}

// addFields is the resource processor configuration of a checked
// add_fields: {"attributes": [{"key", "value", "action": "upsert"}…]}.
func addFields(target string, fields map[string]any) map[string]any {
	flat := map[string]any{}
	flatten(target, fields, flat)
	attrs := make([]any, 0, len(flat))
	for _, k := range slices.Sorted(maps.Keys(flat)) {
		attrs = append(attrs, map[string]any{"key": k, "value": flat[k], "action": "upsert"})
	}
	return map[string]any{"attributes": attrs}
}

func flatten(prefix string, v any, out map[string]any) {
	m, ok := v.(map[string]any)
	if !ok {
		switch v.(type) {
		case []any:
			b, _ := json.Marshal(v)
			out[prefix] = string(b)
		default:
			out[prefix] = v
		}
		return
	}
	for k, x := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		flatten(key, x, out)
	}
}

// literal returns v with every string, map keys included, made literal
// for the collector.
func literal(v any) any {
	switch x := v.(type) {
	case string:
		return escapeDollars(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[escapeDollars(k)] = literal(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = literal(e)
		}
		return out
	}
	return v
}
