package blueprint

import (
	"fmt"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/vars"
)

// KindVariable is a ${…} reference that names something no collector's
// render context has: a provider myriarch does not know.
const KindVariable = "variable"

// Providers lists what a ${provider.key} may name: the providers
// myriarch-updater reports (its context and dynamic providers), and
// the namespaces of a collector's attribute view (the site
// contract, the Supervisor's own attributes, the server's labels).
var (
	UpdaterProviders   = []string{"agent", "host", "env", "local", "docker", "local_dynamic"}
	AttributeNamespace = []string{"site", "deployment", "service", "host", "os", "labels", "dev"}
	// Unsupported are the specified providers that myriarch-updater does not
	// run: a reference to one never resolves on a myriarch host.
	Unsupported = []string{"kubernetes"}
)

// KnownProvider reports whether a reference's first segment names a
// provider or an attribute namespace a collector's context can have.
func KnownProvider(p string) bool {
	return slices.Contains(UpdaterProviders, p) || slices.Contains(AttributeNamespace, p)
}

// judgeVariables reports the references of b's Components that name a
// provider no context has, once per Component and provider.
func judgeVariables(b *Blueprint, lanes [][]placed, add func(kind, lane, format string, args ...any)) {
	seen := map[string]bool{}
	for _, lane := range lanes {
		for _, p := range lane {
			if p.Comp == nil {
				continue
			}
			walkReferences(p.Comp.Config, "", func(path string, r *vars.Reference) {
				for _, a := range r.Alts {
					if a.Const || KnownProvider(a.Path[0]) {
						continue
					}
					k := p.Comp.ID() + "\x00" + a.Path[0]
					if seen[k] {
						continue
					}
					seen[k] = true
					what := fmt.Sprintf("%q is not a provider myriarch knows (%s) nor a namespace of the attribute view (%s); "+
						"only an attribute an agent happens to report could give it", a.Path[0],
						strings.Join(UpdaterProviders, ", "), strings.Join(AttributeNamespace, ", "))
					if slices.Contains(Unsupported, a.Path[0]) {
						what = fmt.Sprintf("the %s provider is not supported by myriarch-updater: a reference to it never resolves", a.Path[0])
					}
					add(KindVariable, p.Lane, "Component %s, %s: %s in %s", p.Comp.ID(), path, what, r.Source)
				}
			})
		}
	}
}

// walkReferences calls fn for each reference in the scalars (keys too)
// under n, with a dotted path for messages.
func walkReferences(n *yaml.Node, path string, fn func(path string, r *vars.Reference)) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "${") {
			return
		}
		tpl, err := vars.Parse(n.Value)
		if err != nil {
			return // the render reports a malformed reference
		}
		for _, r := range tpl.References() {
			fn(path, r)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := path + "." + n.Content[i].Value
			if path == "" {
				p = n.Content[i].Value
			}
			walkReferences(n.Content[i], p, fn)
			walkReferences(n.Content[i+1], p, fn)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			walkReferences(c, fmt.Sprintf("%s[%d]", path, i), fn)
		}
	}
}
