package configrender

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/vars"
)

// walkValues calls fn for every scalar under n, mapping keys too (key is
// true for those), with a dotted path for messages.
func walkValues(n *yaml.Node, path string, fn func(n *yaml.Node, path string, key bool)) {
	switch n.Kind {
	case yaml.ScalarNode:
		fn(n, path, false)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			fn(n.Content[i], joinPath(path, n.Content[i].Value), true)
			walkValues(n.Content[i+1], joinPath(path, n.Content[i].Value), fn)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			walkValues(c, path+"["+strconv.Itoa(i)+"]", fn)
		}
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// errValuesOverMax is a render whose substituted values alone are over
// MaxBody.
var errValuesOverMax = fmt.Errorf("the substituted values alone are over the %d-byte (4 MiB) limit", MaxBody)

// env is what a substitution reads: the variables, and which of them are
// typed (a number or boolean a provider published); every other value is
// a string (the attribute view's are) and stays one.
type env struct {
	set   vars.Set
	typed func(name string) bool
	// seen, when set, is told every variable that gives a value.
	seen func(name string)
}

// substitute returns a copy of n with every template scalar rendered; the
// copy shares the subtrees that hold no template. The first missing
// variable is returned as a *vars.MissingError. Rendered values take their
// bytes from *left, the render's: once it is spent the render stops with
// errValuesOverMax, before a document of them is built.
//
// A value keeps the type of where it came from: a plain whole reference
// to a typed variable is a number or a boolean; anything else — a string
// variable, a constant, a quoted or interpolated reference, a key — is a
// string, quoted where YAML would read another type.
func (t *Template) substitute(n *yaml.Node, e env, left *int) (*yaml.Node, error) {
	if s, ok := t.subs[n]; ok {
		v, name, err := s.tpl.ExpandSeen(e.set, escapeDollars, e.seen)
		if err != nil {
			return nil, err
		}
		if *left -= len(v); *left < 0 {
			return nil, errValuesOverMax
		}
		return scalar(v, s.whole && !s.quoted && !s.key && name != "" && e.typed(name)), nil
	}
	if n.Kind != yaml.MappingNode && n.Kind != yaml.SequenceNode {
		return n, nil
	}
	var out *yaml.Node
	for i, c := range n.Content {
		nc, err := t.substitute(c, e, left)
		if err != nil {
			return nil, err
		}
		if nc == c && out == nil {
			continue
		}
		if out == nil {
			cp := *n
			cp.Content = append([]*yaml.Node(nil), n.Content...)
			out = &cp
		}
		out.Content[i] = nc
	}
	if out == nil {
		return n, nil
	}
	if n.Kind == yaml.MappingNode {
		if err := uniqueKeys(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// uniqueKeys refuses a mapping whose substituted keys collide.
func uniqueKeys(m *yaml.Node) error {
	seen := make(map[string]bool, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i].Value
		if seen[k] {
			return &keyCollisionError{key: k}
		}
		seen[k] = true
	}
	return nil
}

// keyCollisionError is a mapping in which two keys render alike.
type keyCollisionError struct{ key string }

func (e *keyCollisionError) Error() string {
	return fmt.Sprintf("two keys of one mapping render to %q", e.key)
}

// escapeDollars makes a value literal for the collector, whose own
// ${…} expansion reads "$$" as "$": a context value can never make the
// collector read an environment variable or a file.
func escapeDollars(v string) string { return strings.ReplaceAll(v, "$", "$$") }

// Canonical YAML 1.2 core-schema forms that keep their type when a value
// is substituted for a whole plain scalar. Leading zeros, signs on zero,
// exponents and the like stay strings: "007" is a site id, not 7.
var (
	canonicalInt   = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
	canonicalFloat = regexp.MustCompile(`^-?(0|[1-9][0-9]*)\.[0-9]+$`)
)

// scalar is a substituted value: typed when typed is allowed and the value
// is a canonical integer, float or boolean, otherwise a double-quoted
// string, so no value can add YAML structure.
func scalar(v string, typed bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: v, Tag: "!!str", Style: yaml.DoubleQuotedStyle}
	if !typed {
		return n
	}
	switch {
	case v == "true" || v == "false":
		n.Tag, n.Style = "!!bool", 0
	case canonicalInt.MatchString(v) && len(v) <= 18:
		n.Tag, n.Style = "!!int", 0
	case canonicalFloat.MatchString(v) && len(v) <= 24:
		n.Tag, n.Style = "!!float", 0
	}
	return n
}
