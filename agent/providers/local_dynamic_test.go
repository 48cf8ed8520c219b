package providers

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/yamlstrict"
)

// TestLocalDynamicShapes loads providers.local_dynamic as the providers specification writes
// it (vars: a list of mappings) and as items (variables and processors),
// and refuses both at once.
func TestLocalDynamicShapes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		src   string
		want  []map[string]any
		procs []int // processors per mapping
		err   string
	}{
		{name: "vars, as the specification writes it", src: "vars:\n  - item: key1\n  - item: key2\n",
			want: []map[string]any{{"item": "key1"}, {"item": "key2"}}, procs: []int{0, 0}},
		{name: "vars with nested values and an empty element", src: "vars:\n  - {item: a, port: 8080, tags: [x, y]}\n  - {}\n",
			want: []map[string]any{{"item": "a", "port": int64(8080), "tags": []any{"x", "y"}}, {}}, procs: []int{0, 0}},
		{name: "items with processors", src: "items:\n  - vars: {item: key1}\n    processors: [{add_fields: {target: x, fields: {a: 1}}}]\n  - vars: {item: key2}\n",
			want: []map[string]any{{"item": "key1"}, {"item": "key2"}}, procs: []int{1, 0}},
		{name: "empty vars", src: "vars: []\n", want: []map[string]any{}},
		{name: "both", src: "vars:\n  - item: key1\nitems:\n  - vars: {item: key2}\n",
			err: "providers.local_dynamic.vars: set only one of providers.local_dynamic.vars and providers.local_dynamic.items (items carry processors, vars only variables)"},
		{name: "both, one empty", src: "vars: []\nitems: []\n", err: "set only one of providers.local_dynamic.vars and providers.local_dynamic.items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg Config
			if err := yaml.Unmarshal([]byte(tc.src), &cfg.LocalDynamic); err != nil {
				t.Fatal(err)
			}
			err := cfg.Validate()
			if tc.err != "" {
				var fe *yamlstrict.FieldError
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &fe) || fe.Path != "providers.local_dynamic.vars" {
					t.Fatalf("Validate = %v, want a FieldError at providers.local_dynamic.vars saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ms := localDynamicMappings(cfg.LocalDynamic.items())
			if len(ms) != len(tc.want) {
				t.Fatalf("%d mappings, want %d: %+v", len(ms), len(tc.want), ms)
			}
			for i, m := range ms {
				if !reflect.DeepEqual(m.Vars, tc.want[i]) || len(m.Processors) != tc.procs[i] || m.ID != string(rune('0'+i)) {
					t.Errorf("mapping %d = %+v, want vars %v with %d processor(s)", i, m, tc.want[i], tc.procs[i])
				}
			}
		})
	}
}

// A vars element that is not a mapping value is reported with its index.
func TestLocalDynamicVarsInvalid(t *testing.T) {
	cfg := Config{LocalDynamic: LocalDynamicConfig{Vars: []map[string]any{{"ok": 1}, {"f": func() {}}}}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "providers.local_dynamic.vars[1]") {
		t.Fatalf("Validate = %v, want a problem at providers.local_dynamic.vars[1]", err)
	}
}
