package blueprint

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	yaml "go.yaml.in/yaml/v3"
)

// yamlLine pulls the line number out of a go-yaml syntax error so that the
// load error can carry it in its own field.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseDocument returns the single top-level mapping of data. It reports a
// malformed document, an empty file, a top-level list or scalar and more
// than one document, and returns nil in all those cases.
func parseDocument(data []byte, e errs) *yaml.Node {
	return decodeDocument(bytes.NewReader(data), e)
}

// parseText is parseDocument for text already in a string: files within
// the plain subset fastDocument reads are built directly, the rest go
// through go-yaml. sc may be nil.
func parseText(src string, sc *fastScratch, e errs) *yaml.Node {
	if !goYAMLOnly.Load() {
		if top, ok := fastDocument(src, sc); ok {
			return top
		}
	}
	return decodeDocument(strings.NewReader(src), e)
}

// goYAMLOnly turns the fast path off, so that tests can hold whole loads
// with and without it to the same result.
var goYAMLOnly atomic.Bool

func decodeDocument(r io.Reader, e errs) *yaml.Node {
	dec := yaml.NewDecoder(r)
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			e.at(0, "empty file: expected a YAML mapping")
			return nil
		}
		reportSyntax(err, e)
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		reportSyntax(err, e)
		return nil
	default:
		e.at(extra.Line, "more than one YAML document in the file: write exactly one")
		return nil
	}
	if len(doc.Content) == 0 {
		e.at(0, "empty file: expected a YAML mapping")
		return nil
	}
	top := deref(doc.Content[0])
	switch {
	case top.Kind == yaml.ScalarNode && top.Tag == "!!null":
		e.at(0, "empty file: expected a YAML mapping")
		return nil
	case top.Kind == yaml.SequenceNode:
		e.at(top.Line, "top-level list: expected a YAML mapping")
		return nil
	case top.Kind != yaml.MappingNode:
		e.at(top.Line, "malformed document: expected a YAML mapping at the top level, got %s", describe(top))
		return nil
	}
	return top
}

func reportSyntax(err error, e errs) {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		e.at(line, "malformed YAML: %s", m[2])
		return
	}
	e.at(0, "malformed YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// deref follows aliases so that anchors in authored files behave as the
// value they stand for.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	return n
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return strconv.Quote(n.Value)
	}
	return "an unsupported node"
}

// fields holds a mapping's values by key, for the short fixed key lists of
// authored objects (at most 8 keys): a lookup is a scan of the list, and
// nothing is allocated per mapping.
type fields struct {
	allowed []string
	vals    [8]*yaml.Node
	present uint8
}

// lookup returns the value of key and whether the mapping has it.
func (f *fields) lookup(key string) (*yaml.Node, bool) {
	for i, k := range f.allowed {
		if k == key {
			return f.vals[i], f.present&(1<<i) != 0
		}
	}
	return nil, false
}

// get returns the value of key, nil when absent.
func (f *fields) get(key string) *yaml.Node {
	n, _ := f.lookup(key)
	return n
}

// mapping checks that n is a mapping whose keys are all in allowed (at most
// 8), reports every unknown or repeated key with its line, and returns the
// values by key; ok is false when n is not a mapping. what names the
// mapping in messages ("Blueprint", "lane entry", …); hint, when not empty,
// is appended to unknown-field messages.
func mapping(n *yaml.Node, what string, allowed []string, hint string, e errs) (out fields, ok bool) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		e.at(n.Line, "%s must be a mapping, got %s", what, describe(n))
		return out, false
	}
	out.allowed = allowed
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			e.at(k.Line, "%s has an unsupported key (merge keys and complex keys are not allowed)", what)
			continue
		}
		idx := slices.Index(allowed, k.Value)
		if idx < 0 {
			msg := "unknown field " + strconv.Quote(k.Value) + " in " + what
			if hint != "" {
				msg += ": " + hint
			}
			e.at(k.Line, "%s", msg)
			continue
		}
		if out.present&(1<<idx) != 0 {
			e.at(k.Line, "field %q appears more than once in %s", k.Value, what)
			continue
		}
		out.present |= 1 << idx
		out.vals[idx] = deref(v)
	}
	return out, true
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// str reads a string field. Missing or null fields return "" with ok=false
// and no error, so that callers decide whether the field is required.
func str(f *fields, key, what string, e errs) (val string, line int, ok bool) {
	n, present := f.lookup(key)
	if !present || isNull(n) {
		return "", lineOf(n), false
	}
	if n.Kind != yaml.ScalarNode {
		e.at(n.Line, "%s field %q must be a string, got %s", what, key, describe(n))
		return "", n.Line, false
	}
	return n.Value, n.Line, true
}

// version reads the required integer version field and reports a missing,
// non-integer or below-1 version.
func version(f *fields, parentLine int, what string, e errs) int {
	n, present := f.lookup("version")
	if !present || isNull(n) {
		e.at(parentLine, "%s is missing required field \"version\" (an integer of at least 1)", what)
		return 0
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		e.at(n.Line, "%s version must be an integer of at least 1, got %s", what, describe(n))
		return 0
	}
	var v int
	if n.Value[0] != '0' && len(n.Value) <= 18 && digits(n.Value) {
		v, _ = strconv.Atoi(n.Value) // what Decode would give, without reflection
	} else if err := n.Decode(&v); err != nil {
		e.at(n.Line, "%s version must be an integer of at least 1, got %s", what, describe(n))
		return 0
	}
	if v < 1 {
		e.at(n.Line, "%s version must be at least 1, got %d", what, v)
		return 0
	}
	return v
}

func lineOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

// positiveInt parses a pin or claim version: a positive decimal integer
// without sign or leading zeros.
func positiveInt(s string) (int, bool) {
	if s == "" || s[0] < '1' || s[0] > '9' {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, false
	}
	return v, true
}
