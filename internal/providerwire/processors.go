package providerwire

import (
	"errors"
	"fmt"
)

// A mapping's processors are host data, and only one type is
// accepted: add_fields {"target": T, "fields": {…}}, which myriarchd
// renders as a resource processor upserting T.<field> on what the
// mapping's receiver copy collects. Every other type is refused, so a
// provider can never place an arbitrary component (a listener, an exporter
// to elsewhere) in a collector's pipeline.

// ProcessorAddFields is the one processor type a mapping may carry.
const ProcessorAddFields = "add_fields"

// Bounds of one add_fields processor.
const (
	// MaxAddFields is the most fields one add_fields may set.
	MaxAddFields = 256
	// MaxFieldDepth is the deepest nesting of its fields.
	MaxFieldDepth = 4
)

// CheckProcessor reports whether p is a processor a mapping may carry: an
// object with the one key add_fields, whose value CheckAddFields accepts.
func CheckProcessor(p any) error {
	m, ok := p.(map[string]any)
	if !ok || len(m) != 1 {
		return errors.New("a processor is an object with one key, its type")
	}
	for typ, cfg := range m {
		if typ != ProcessorAddFields {
			return fmt.Errorf("type %q is not supported: a mapping may carry %s only", clip(typ), ProcessorAddFields)
		}
		if err := CheckAddFields(cfg); err != nil {
			return fmt.Errorf("%s: %w", typ, err)
		}
	}
	return nil
}

// CheckAddFields reports whether cfg is an add_fields configuration (see
// AddFieldsOf).
func CheckAddFields(cfg any) error {
	_, _, err := AddFieldsOf(cfg)
	return err
}

// AddFieldsOf reads an add_fields configuration: {"target": T, "fields":
// {…}} (target optional, nothing else beside), or the providers' shorthand,
// the fields themselves ({"container.name": "web"}, no target). The fields
// are at most MaxAddFields, nested at most MaxFieldDepth deep.
func AddFieldsOf(cfg any) (target string, fields map[string]any, err error) {
	m, ok := cfg.(map[string]any)
	if !ok {
		return "", nil, errors.New("not an object")
	}
	if f, structured := m["fields"].(map[string]any); structured {
		for k := range m {
			if k != "target" && k != "fields" {
				return "", nil, fmt.Errorf("unknown key %q beside fields (add_fields has target and fields)", clip(k))
			}
		}
		if t, ok := m["target"]; ok {
			if target, ok = t.(string); !ok {
				return "", nil, errors.New("target is not a string")
			}
		}
		fields = f
	} else {
		fields = m // the shorthand: the fields themselves
	}
	if err := checkFields(fields); err != nil {
		return "", nil, err
	}
	return target, fields, nil
}

func checkFields(fields map[string]any) error {
	n := 0
	var walk func(v map[string]any, depth int) error
	walk = func(v map[string]any, depth int) error {
		if depth > MaxFieldDepth {
			return fmt.Errorf("fields nested more than %d deep", MaxFieldDepth)
		}
		for _, x := range v {
			if sub, ok := x.(map[string]any); ok {
				if err := walk(sub, depth+1); err != nil {
					return err
				}
				continue
			}
			if n++; n > MaxAddFields {
				return fmt.Errorf("more than %d fields", MaxAddFields)
			}
		}
		return nil
	}
	return walk(fields, 1)
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
