package estate

import "go.yaml.in/yaml/v3"

// An estate file is bounded before it is decoded: in bytes, in mapping
// keys, and in keys per mapping. The YAML decoder checks a mapping for
// duplicate keys in time quadratic in its size, so one file of millions of
// keys would hold a (re)load for many minutes.
const (
	MaxFileBytes      = 4 << 20
	MaxKeysPerFile    = 100_000
	MaxKeysPerMapping = 10_000
)

// checkSize reports a file whose parsed tree is over the key limits.
func checkSize(ps *problems, path string, root *yaml.Node) bool {
	total := 0
	var bad *yaml.Node
	var walk func(n *yaml.Node) bool
	walk = func(n *yaml.Node) bool {
		if n.Kind == yaml.MappingNode {
			keys := len(n.Content) / 2
			total += keys
			if keys > MaxKeysPerMapping {
				bad = n
				return false
			}
			if total > MaxKeysPerFile {
				return false
			}
		}
		for _, c := range n.Content {
			if !walk(c) {
				return false
			}
		}
		return true
	}
	if walk(root) {
		return true
	}
	if bad != nil {
		ps.add(path, bad.Line, "a mapping of %d keys: at most %d are allowed in one mapping", len(bad.Content)/2, MaxKeysPerMapping)
	} else {
		ps.add(path, 0, "more than %d keys: at most %d are allowed in one file", MaxKeysPerFile, MaxKeysPerFile)
	}
	return false
}
