package access

import "testing"

// The roles as the product defines them, route by route: what each may
// and may not do. The table of rules must keep these decisions.
func TestRolesAsDefined(t *testing.T) {
	viewer := Principal{Name: "v", Kind: KindUser, Role: Viewer}
	operator := Principal{Name: "o", Kind: KindUser, Role: Operator}
	admin := Principal{Name: "a", Kind: KindUser, Role: Admin}
	edgeOperator := Principal{Name: "e", Kind: KindAPIKey, Role: Operator, Fleets: []string{"edge", "core"}}
	edgeAdmin := Principal{Name: "ea", Kind: KindUser, Role: Admin, Fleets: []string{"edge"}}
	for _, tc := range []struct {
		who     Principal
		route   string
		fleet   string
		allowed bool
	}{
		// A viewer reads everything except secrets.
		{viewer, "GET /api/v1/agents", "", true},
		{viewer, "GET /api/v1/fleets", "", true},
		{viewer, "GET /api/v1/tokens", "", true},
		{viewer, "GET /{$}", "", true},
		{viewer, "GET /api/v1/agents/{uid}/config", "", false},
		{viewer, "GET /api/v1/agents/{uid}/context", "", false},
		{viewer, "POST /api/v1/fleets/{name}/pause", "edge", false},
		{viewer, "POST /fleets/{name}/{op}", "edge", false},
		// An operator pauses, resumes, retries and reloads.
		{operator, "GET /api/v1/agents/{uid}/config", "", true},
		{operator, "POST /api/v1/fleets/{name}/pause", "edge", true},
		{operator, "POST /api/v1/fleets/{name}/resume", "edge", true},
		{operator, "POST /api/v1/fleets/{name}/retry", "edge", true},
		{operator, "POST /api/v1/fleets/{name}/config/retry", "edge", true},
		{operator, "POST /api/v1/agents/{uid}/retry", "edge", true},
		{operator, "POST /api/v1/agents/{uid}/config/retry", "", true},
		{operator, "POST /api/v1/estate/reload", "", true},
		{operator, "POST /api/v1/tokens", "", false},
		{operator, "POST /api/v1/users", "", false},
		{operator, "POST /api/v1/apikeys", "", false},
		{operator, "GET /debug/pprof/profile", "", false},
		// An admin manages users, keys, tokens.
		{admin, "POST /api/v1/users", "", true},
		{admin, "DELETE /api/v1/apikeys/{id}", "", true},
		{admin, "DELETE /api/v1/tokens/{id}", "", true},
		{admin, "POST /tokens/{id}/revoke", "", true},
		// A scope: changes within its fleets only, reads everywhere.
		{edgeOperator, "POST /api/v1/fleets/{name}/pause", "edge", true},
		{edgeOperator, "POST /api/v1/fleets/{name}/pause", "core", true},
		{edgeOperator, "POST /api/v1/fleets/{name}/pause", "lab", false},
		{edgeOperator, "POST /api/v1/agents/{uid}/retry", "edge", true},
		{edgeOperator, "POST /api/v1/agents/{uid}/retry", "lab", false},
		{edgeOperator, "POST /api/v1/agents/{uid}/retry", "", false},
		{edgeOperator, "POST /api/v1/estate/reload", "", false},
		{edgeOperator, "GET /api/v1/agents", "", true},
		{edgeAdmin, "POST /api/v1/users", "", true}, // within its scope: the accounts check what it grants
		{edgeAdmin, "POST /api/v1/tokens", "", false},
		{edgeOperator, "POST /api/v1/apikeys", "", false},
		{edgeAdmin, "POST /api/v1/fleets/{name}/resume", "edge", true},
		// Public routes need nobody.
		{Principal{}, "GET /healthz", "", true},
		{Principal{}, "GET /login", "", true},
		{Principal{}, "GET /api/v1/agents", "", false},
	} {
		rule, ok := Rules[tc.route]
		if !ok {
			t.Errorf("no rule for %s", tc.route)
			continue
		}
		if d := Check(tc.who, rule, tc.fleet); d.Allowed != tc.allowed {
			t.Errorf("%s (%s on %v) %s on fleet %q: allowed %v (%s), want %v", tc.who.Name, tc.who.Role, tc.who.Fleets, tc.route, tc.fleet, d.Allowed, d.Reason, tc.allowed)
		}
	}
}

// A principal covers another when it has at least its rights: what it may
// grant.
func TestCovers(t *testing.T) {
	all := func(r Role) Principal { return Principal{Role: r} }
	in := func(r Role, f ...string) Principal { return Principal{Role: r, Fleets: f} }
	for _, tc := range []struct {
		by, want Principal
		ok       bool
	}{
		{all(Admin), all(Admin), true},
		{all(Admin), in(Operator, "edge"), true},
		{all(Operator), all(Admin), false},
		{in(Admin, "edge"), all(Viewer), false},
		{in(Admin, "edge", "core"), in(Operator, "edge"), true},
		{in(Admin, "edge"), in(Operator, "edge", "core"), false},
		{in(Admin, "edge"), Principal{Role: Admin, Fleets: []string{}}, true},
		{in(Admin, "edge"), in(Admin), false}, // no fleets given: every fleet
	} {
		if got := tc.by.Covers(tc.want); got != tc.ok {
			t.Errorf("%+v covers %+v: %v, want %v", tc.by, tc.want, got, tc.ok)
		}
	}
}

// Every change names the action the audit trail records it under.
func TestChangesHaveActions(t *testing.T) {
	for p, r := range Rules {
		if r.Change && r.Action == "" {
			t.Errorf("%s changes state without an audit action", p)
		}
		if r.Public && r.Change {
			t.Errorf("%s is public and changes state", p)
		}
	}
}
