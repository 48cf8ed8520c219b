package vars

import (
	"slices"
	"sort"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// KeyOrder records the document order of map keys, by path, so evaluation
// (and so the first missing reference reported, and the first parse error)
// follows the order the author wrote rather than Go's map order. Build one
// with YAMLKeyOrder; keys it does not list come after, sorted.
type KeyOrder map[string][]string

func keyPath(parent, key string) string     { return parent + "\x1f" + key }
func indexPath(parent string, i int) string { return parent + "\x1f[" + strconv.Itoa(i) + "]" }

// YAMLKeyOrder reads the key order of a YAML document.
func YAMLKeyOrder(src []byte) (KeyOrder, error) {
	_, o, err := decodeYAML(src)
	return o, err
}

// decodeYAML decodes a document and its key order. Timestamps stay the
// text that was written: a document's untouched parts must not change form.
func decodeYAML(src []byte) (any, KeyOrder, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, nil, err
	}
	o := KeyOrder{}
	if len(doc.Content) == 0 {
		return nil, o, nil
	}
	root := doc.Content[0]
	o.walk(root, "", 0)
	keepTimestampsText(root, map[*yaml.Node]bool{})
	var v any
	if err := root.Decode(&v); err != nil {
		return nil, nil, err
	}
	return v, o, nil
}

func keepTimestampsText(n *yaml.Node, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!timestamp" && n.Style&yaml.TaggedStyle == 0 {
		n.Tag = "!!str"
	}
	for _, c := range n.Content {
		keepTimestampsText(c, seen)
	}
	keepTimestampsText(n.Alias, seen)
}

func (o KeyOrder) walk(n *yaml.Node, path string, depth int) {
	if depth > 10000 {
		return
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		var keys []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				continue
			}
			keys = append(keys, k.Value)
			o.walk(n.Content[i+1], keyPath(path, k.Value), depth+1)
		}
		o[path] = keys
	case yaml.SequenceNode:
		for i, c := range n.Content {
			o.walk(c, indexPath(path, i), depth+1)
		}
	}
}

// orderedKeys lists m's keys in document order when known, the rest sorted.
func (o KeyOrder) orderedKeys(path string, m map[string]any) []string {
	out := make([]string, 0, len(m))
	seen := make(map[string]bool, len(m))
	for _, k := range o[path] {
		if _, ok := m[k]; ok && !seen[k] {
			out = append(out, k)
			seen[k] = true
		}
	}
	rest := make([]string, 0, len(m)-len(out))
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return slices.Concat(out, rest)
}
