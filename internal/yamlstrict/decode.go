// Package yamlstrict decodes YAML configuration files strictly: unknown
// keys, duplicate keys and values of the wrong type are problems, every
// problem is collected instead of stopping at the first, and each is named
// by its YAML path and line rather than by a Go type.
package yamlstrict

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Expecter is implemented by value types that describe a valid value for
// error messages ("a size such as 1GiB or 500MB").
type Expecter interface {
	ExpectedYAML() string
}

// Parse reads a YAML document into its node tree.
func Parse(data []byte) (*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return &root, nil
}

// Decoder walks a YAML node tree alongside the Go values it fills,
// collecting problems.
type Decoder struct {
	problems []error
	lines    map[string]int // YAML path -> line of its key
	failed   map[string]bool
}

// NewDecoder returns a Decoder with no problems yet.
func NewDecoder() *Decoder {
	return &Decoder{lines: map[string]int{}, failed: map[string]bool{}}
}

// Problems returns every problem found so far, in the order found.
func (d *Decoder) Problems() []error { return d.problems }

// Line returns the line of the key at path (0 if it was not in the file).
func (d *Decoder) Line(path string) int { return d.lines[path] }

// Failed reports whether the value at path could not be decoded, so a
// later check of the same value need not report it again.
func (d *Decoder) Failed(path string) bool { return d.failed[path] }

// Fail records a problem with the value at path.
func (d *Decoder) Fail(path string, line int, format string, args ...any) {
	d.failed[path] = true
	d.problems = append(d.problems, &FieldError{Path: path, Line: line, Err: fmt.Errorf(format, args...)})
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	durationType    = reflect.TypeFor[time.Duration]()
	timeType        = reflect.TypeFor[time.Time]()
	expecterType    = reflect.TypeFor[Expecter]()
)

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// resolve unwraps a document and follows an alias; it returns nil for an
// empty document or an empty value ("key:" or "key: ~").
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == 0 || n.Kind == yaml.DocumentNode || isNull(n) {
		return nil
	}
	return n
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// Decode fills v (addressable) from n; path names n for error messages.
// Structs are filled by their yaml tags (the lower-cased field name when
// untagged); an empty value keeps what v holds, so decoding over defaults
// keeps the defaults of absent keys.
func (d *Decoder) Decode(n *yaml.Node, v reflect.Value, path string) {
	if n = resolve(n); n == nil {
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
		d.Mapping(n, path, yamlFields(v.Type()), func(i int, val *yaml.Node, p string) {
			d.Decode(val, v.Field(i), p)
		})
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.Decode(n, v.Elem(), path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.Fail(path, n.Line, "expected a list, got %s", describeNode(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.lines[p] = item.Line
			d.Decode(item, s.Index(i), p)
		}
		v.Set(s)
	default:
		d.decodeLeaf(n, v, path)
	}
}

// Mapping walks the mapping n whose known keys are keys (key -> index):
// a duplicate or unknown key is a problem (an unknown one with the closest
// known key as a suggestion); each known key's value is handed to fn with
// its index and path. An empty document or value has no keys.
func (d *Decoder) Mapping(n *yaml.Node, path string, keys map[string]int, fn func(i int, val *yaml.Node, path string)) {
	if n = resolve(n); n == nil {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.Fail(path, n.Line, "expected a mapping, got %s", describeNode(n))
		return
	}
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		p := joinPath(path, k.Value)
		d.lines[p] = k.Line
		if seen[k.Value] {
			d.Fail(p, k.Line, "duplicate key")
			continue
		}
		seen[k.Value] = true
		idx, ok := keys[k.Value]
		if !ok {
			d.Fail(p, k.Line, "unknown key%s", suggest(k.Value, keys))
			continue
		}
		fn(idx, val, p)
	}
}

// decodeLeaf lets the YAML library convert a scalar (or an opaque map/any
// value), rewording its error so it names the path rather than a Go type.
func (d *Decoder) decodeLeaf(n *yaml.Node, v reflect.Value, path string) {
	tmp := reflect.New(v.Type())
	tmp.Elem().Set(v)
	if err := n.Decode(tmp.Interface()); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) || n.Kind != yaml.ScalarNode || v.Type() == timeType {
			d.Fail(path, n.Line, "invalid value %s: expected %s", describeNode(n), Expected(v.Type()))
		} else {
			d.Fail(path, n.Line, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
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

// Expected describes a valid value of type t ("a duration such as 30s or 5m").
func Expected(t reflect.Type) string {
	switch {
	case t.Kind() != reflect.Pointer && t.Implements(expecterType):
		return reflect.Zero(t).Interface().(Expecter).ExpectedYAML()
	case t == durationType:
		return "a duration such as 30s or 5m"
	case t == timeType:
		return "an RFC 3339 time such as 2027-01-01T00:00:00Z"
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
		return Expected(t.Elem())
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
