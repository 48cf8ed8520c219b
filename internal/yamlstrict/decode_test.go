package yamlstrict

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func decodeFlat(t *testing.T, src string) (map[string]any, []string) {
	t.Helper()
	name := "default"
	targets := []any{&name, new(time.Duration), new(bool)}
	keys := map[string]int{"name": 0, "every": 1, "on": 2}
	root, err := Parse([]byte(src))
	if err != nil {
		return nil, []string{err.Error()}
	}
	d := NewDecoder()
	got := map[string]any{}
	d.Mapping(root, "", keys, func(i int, val *yaml.Node, path string) {
		d.Decode(val, reflect.ValueOf(targets[i]).Elem(), path)
		if !d.Failed(path) {
			got[path] = reflect.ValueOf(targets[i]).Elem().Interface()
		}
	})
	problems := d.Problems()
	SortByLine(problems)
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.Error())
	}
	return got, msgs
}

func TestMapping(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want map[string]any
		errs []string // in this order
	}{
		{"empty file", "", map[string]any{}, nil},
		{"comments only", "# nothing\n", map[string]any{}, nil},
		{"values", "name: a\nevery: 5s\non: true\n", map[string]any{"name": "a", "every": 5 * time.Second, "on": true}, nil},
		{"empty value keeps the target", "name:\n", map[string]any{"name": "default"}, nil},
		{"unknown key with a suggestion", "nmae: a\n", map[string]any{}, []string{`nmae (line 1): unknown key (did you mean "name"?)`}},
		{"duplicate key", "name: a\nname: b\n", map[string]any{"name": "a"}, []string{"name (line 2): duplicate key"}},
		{"wrong types at once", "every: soon\non: maybe\nname: [x]\n", map[string]any{}, []string{
			`every (line 1): invalid value "soon": expected a duration such as 30s or 5m`,
			`on (line 2): invalid value "maybe": expected true or false`,
			`name (line 3): invalid value a list: expected a string`,
		}},
		{"integer is not a duration", "every: 30\n", map[string]any{}, []string{`every (line 1): invalid value "30": expected a duration`}},
		{"not a mapping", "- a\n", map[string]any{}, []string{"(line 1): expected a mapping, got a list"}},
		{"invalid YAML", "name: [\n", nil, []string{"invalid YAML"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := decodeFlat(t, tt.yaml)
			if tt.want != nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decoded %v, want %v", got, tt.want)
			}
			if len(errs) != len(tt.errs) {
				t.Fatalf("problems:\n%s\nwant %d", strings.Join(errs, "\n"), len(tt.errs))
			}
			for i, w := range tt.errs {
				if !strings.Contains(errs[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, errs[i], w)
				}
			}
		})
	}
}

type size int

func (size) ExpectedYAML() string { return "a size such as 1GiB" }

func (s *size) UnmarshalYAML(n *yaml.Node) error { return errors.New("no sizes here") }

func TestExpecterNamesTheType(t *testing.T) {
	root, _ := Parse([]byte("s: {a: 1}\n"))
	var v struct {
		S size `yaml:"s"`
	}
	d := NewDecoder()
	d.Decode(root, reflect.ValueOf(&v).Elem(), "")
	if p := d.Problems(); len(p) != 1 || !strings.Contains(p[0].Error(), "s (line 1): invalid value a mapping: expected a size such as 1GiB") {
		t.Fatalf("problems = %v", p)
	}
}

func TestFlattenAndError(t *testing.T) {
	a, b := &FieldError{Path: "b", Line: 2, Err: errors.New("x")}, &FieldError{Path: "a", Line: 1, Err: errors.New("y")}
	probs := Flatten(errors.Join(a, errors.Join(errors.New("whole file"), b)))
	SortByLine(probs)
	e := &Error{File: "/etc/x.yaml", Problems: probs}
	want := "config /etc/x.yaml: 3 problem(s):\n  a (line 1): y\n  b (line 2): x\n  whole file"
	if e.Error() != want {
		t.Fatalf("Error() = %q, want %q", e.Error(), want)
	}
	var fe *FieldError
	if !errors.As(e, &fe) || fe.Path != "a" {
		t.Fatalf("errors.As = %v", fe)
	}
}
