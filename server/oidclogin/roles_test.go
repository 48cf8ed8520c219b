package oidclogin

import (
	"slices"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/server/access"
)

func TestResolve(t *testing.T) {
	roles := Roles{
		"platform-admins": {Role: "admin"},
		"sre":             {Role: "operator", Fleets: []string{"edge"}},
		"sre-core":        {Role: "operator", Fleets: []string{"core", "edge"}},
		"sre-all":         {Role: "operator"},
		"edge-admins":     {Role: "admin", Fleets: []string{"edge"}},
		"everyone":        {Role: "viewer"},
		"readers":         {Role: "viewer", Fleets: []string{"lab"}},
	}
	for _, tc := range []struct {
		name   string
		values []string
		role   access.Role
		fleets []string // nil: every fleet
	}{
		{"no values", nil, access.None, nil},
		{"no value named", []string{"marketing", "Everyone"}, access.None, nil},
		{"one value", []string{"everyone"}, access.Viewer, nil},
		{"one scoped value", []string{"sre"}, access.Operator, []string{"edge"}},
		{"the highest role wins", []string{"everyone", "sre", "platform-admins"}, access.Admin, nil},
		{"a higher scoped role wins over a lower unscoped one", []string{"everyone", "sre"}, access.Operator, []string{"edge"}},
		{"the highest role wins whatever its scope", []string{"sre-all", "edge-admins"}, access.Admin, []string{"edge"}},
		{"equal roles: the union of their fleets", []string{"sre-core", "sre"}, access.Operator, []string{"core", "edge"}},
		{"equal roles: an unscoped one is every fleet", []string{"sre", "sre-all"}, access.Operator, nil},
		{"equal roles: unscoped first", []string{"sre-all", "sre"}, access.Operator, nil},
		{"lower roles' fleets do not count", []string{"readers", "sre"}, access.Operator, []string{"edge"}},
		{"a value named twice", []string{"sre", "sre"}, access.Operator, []string{"edge"}},
		{"values are matched exactly", []string{"SRE", " sre"}, access.None, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			role, fleets := roles.Resolve(tc.values)
			if role != tc.role || !slices.Equal(fleets, tc.fleets) || (fleets == nil) != (tc.fleets == nil) {
				t.Errorf("Resolve(%q) = %s %#v, want %s %#v", tc.values, role, fleets, tc.role, tc.fleets)
			}
		})
	}
}

// A grant scoped to an empty list of fleets (which Validate refuses) still
// resolves to a scope, never to every fleet.
func TestResolveNeverWidensAnEmptyScope(t *testing.T) {
	role, fleets := Roles{"g": {Role: "operator", Fleets: []string{}}}.Resolve([]string{"g"})
	if role != access.Operator || fleets == nil || len(fleets) != 0 {
		t.Fatalf("got %s %#v, want operator on no fleet", role, fleets)
	}
}

func TestRolesValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		roles Roles
		want  []string // each in the error; none: valid
	}{
		{"valid", Roles{"a": {Role: "admin"}, "b": {Role: "viewer", Fleets: []string{"edge"}}}, nil},
		{"empty", Roles{}, []string{"oidc_roles is empty"}},
		{"nil", nil, []string{"oidc_roles is empty"}},
		{"unknown role", Roles{"sre": {Role: "oper"}}, []string{`oidc_roles "sre": unknown role "oper"`}},
		{"missing role", Roles{"sre": {Fleets: []string{"edge"}}}, []string{`oidc_roles "sre": unknown role ""`}},
		{"empty fleets", Roles{"sre": {Role: "operator", Fleets: []string{}}}, []string{`oidc_roles "sre": fleets is empty`}},
		{"a fleet without a name", Roles{"sre": {Role: "operator", Fleets: []string{"edge", ""}}}, []string{`oidc_roles "sre": a fleet without a name`}},
		{"an empty claim value", Roles{"": {Role: "admin"}}, []string{"a claim value must not be empty"}},
		{"every problem", Roles{"a": {Role: "root"}, "b": {Role: "viewer", Fleets: []string{}}, "c": {Role: "x", Fleets: []string{""}}},
			[]string{`"a": unknown role "root"`, `"b": fleets is empty`, `"c": unknown role "x"`, `"c": a fleet without a name`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.roles.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate = nil, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
