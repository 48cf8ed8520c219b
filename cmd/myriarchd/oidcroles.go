package main

import (
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/yamlstrict"
	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/oidclogin"
)

// decodeRoles reads the config file's oidc_roles at path into roles: each
// value of the role claim maps to a role's name or to {role, fleets}. Each
// problem is named by its key and line.
func decodeRoles(d *yamlstrict.Decoder, n *yaml.Node, path string, roles *oidclogin.Roles) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.Fail(path, n.Line, "expected a mapping of values of the role claim to roles")
		return
	}
	out, seen := oidclogin.Roles{}, map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := path + "." + k.Value
		if seen[k.Value] {
			d.Fail(p, k.Line, "duplicate key")
			continue
		}
		seen[k.Value] = true
		var g oidclogin.Grant
		before := len(d.Problems())
		if v.Kind == yaml.ScalarNode {
			g.Role = v.Value
		} else {
			d.Decode(v, reflect.ValueOf(&g).Elem(), p)
		}
		if len(d.Problems()) > before {
			continue
		}
		if _, err := access.ParseRole(g.Role); err != nil {
			d.Fail(p, k.Line, "%v", err)
			continue
		}
		out[k.Value] = g
	}
	*roles = out
}
