package providerwire

import (
	"strings"
	"testing"
)

func TestAddFieldsOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    any
		target string
		fields int
		err    string
	}{
		{"structured", map[string]any{"target": "container", "fields": map[string]any{"name": "web", "image": map[string]any{"name": "nginx"}}}, "container", 2, ""},
		{"no target", map[string]any{"fields": map[string]any{"a": 1}}, "", 1, ""},
		{"shorthand", map[string]any{"container.name": "my-container"}, "", 1, ""},
		{"something beside fields", map[string]any{"fields": map[string]any{}, "exporters": map[string]any{}}, "", 0, `unknown key "exporters"`},
		{"a target that is not text", map[string]any{"target": 1, "fields": map[string]any{}}, "", 0, "target is not a string"},
		{"not an object", "x", "", 0, "not an object"},
		{"too deep", map[string]any{"a": map[string]any{"b": map[string]any{"c": map[string]any{"d": map[string]any{"e": 1}}}}}, "", 0, "nested more than 4 deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, fields, err := AddFieldsOf(tc.cfg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || target != tc.target || len(fields) != tc.fields {
				t.Fatalf("%q %v %v", target, fields, err)
			}
		})
	}
	many := map[string]any{}
	for i := range MaxAddFields + 1 {
		many[strings.Repeat("k", i+1)] = i
	}
	if err := CheckAddFields(many); err == nil || !strings.Contains(err.Error(), "more than 256 fields") {
		t.Fatalf("too many fields: %v", err)
	}
	if err := CheckProcessor(map[string]any{"drop_fields": map[string]any{}}); err == nil || !strings.Contains(err.Error(), `type "drop_fields" is not supported`) {
		t.Fatalf("another type: %v", err)
	}
}
