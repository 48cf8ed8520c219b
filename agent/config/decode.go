package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder walks a YAML node tree alongside the Go struct it fills. Unlike
// yaml.Decoder.KnownFields it does not stop at the first problem and it names
// problems by YAML path instead of Go type.
type decoder struct {
	problems []error
	lines    map[string]int // YAML path -> line of its key
	failed   map[string]bool
}

func newDecoder() *decoder {
	return &decoder{lines: map[string]int{}, failed: map[string]bool{}}
}

func (d *decoder) fail(path string, line int, format string, args ...any) {
	d.failed[path] = true
	d.problems = append(d.problems, &FieldError{Path: path, Line: line, Err: fmt.Errorf(format, args...)})
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	durationType    = reflect.TypeFor[time.Duration]()
)

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// decode fills v (addressable) from n; path names n for error messages.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	for n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if isNull(n) {
		// An empty value ("key:" or "key: ~") keeps the default.
		return
	}
	if reflect.PointerTo(v.Type()).Implements(unmarshalerType) {
		d.decodeLeaf(n, v, path)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			d.decodeLeaf(n, v, path)
			return
		}
		d.decodeStruct(n, v, path)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(path, n.Line, "expected a list, got %s", describeNode(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.lines[p] = item.Line
			d.decode(item, s.Index(i), p)
		}
		v.Set(s)
	default:
		d.decodeLeaf(n, v, path)
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(path, n.Line, "expected a mapping, got %s", describeNode(n))
		return
	}
	fields := yamlFields(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		p := joinPath(path, k.Value)
		d.lines[p] = k.Line
		if seen[k.Value] {
			d.fail(p, k.Line, "duplicate key")
			continue
		}
		seen[k.Value] = true
		idx, ok := fields[k.Value]
		if !ok {
			d.fail(p, k.Line, "unknown key%s", suggest(k.Value, fields))
			continue
		}
		d.decode(val, v.Field(idx), p)
	}
}

// decodeLeaf lets the YAML library convert a scalar (or an opaque map/any
// value), rewording its error so it names the path rather than a Go type.
func (d *decoder) decodeLeaf(n *yaml.Node, v reflect.Value, path string) {
	tmp := reflect.New(v.Type())
	tmp.Elem().Set(v)
	if err := n.Decode(tmp.Interface()); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) || n.Kind != yaml.ScalarNode {
			d.fail(path, n.Line, "invalid value %s: expected %s", describeNode(n), expected(v.Type()))
		} else {
			d.fail(path, n.Line, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return
	}
	v.Set(tmp.Elem())
}

func yamlFields(t reflect.Type) map[string]int {
	m := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = i
	}
	return m
}

func expected(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration such as 30s or 5m"
	case t == reflect.TypeFor[ByteSize]():
		return "a size such as 1GiB or 500MB"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Map:
		return "a mapping"
	case reflect.Slice:
		return "a list"
	case reflect.Pointer:
		return expected(t.Elem())
	}
	return "a " + t.String()
}

func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "an unsupported node"
}

// suggest proposes the closest known key for a likely typo.
func suggest(key string, fields map[string]int) string {
	best, bestD := "", 3
	for name := range fields {
		dd := editDistance(key, name)
		if dd < bestD || (dd == bestD && best != "" && name < best) {
			best, bestD = name, dd
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
