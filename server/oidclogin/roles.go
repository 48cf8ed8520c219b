package oidclogin

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/myriarch/myriarch/server/access"
)

// Grant is what one value of the role claim gives: a role, acting on the
// fleets it names (none: every fleet).
type Grant struct {
	Role   string   `yaml:"role"`
	Fleets []string `yaml:"fleets"`
}

// Roles maps values of the role claim (a group's name, say) to what they
// grant. It is the config file's oidc_roles.
type Roles map[string]Grant

// Validate reports every problem of the mapping, each named by its claim
// value.
func (r Roles) Validate() error {
	if len(r) == 0 {
		return errors.New("oidc_roles is empty: it must map at least one value of the role claim to a role, or no one could sign in with the provider")
	}
	var errs []error
	for _, v := range slices.Sorted(maps.Keys(r)) {
		g := r[v]
		if v == "" {
			errs = append(errs, errors.New("oidc_roles: a claim value must not be empty"))
		}
		if _, err := access.ParseRole(g.Role); err != nil {
			errs = append(errs, fmt.Errorf("oidc_roles %q: %w", v, err))
		}
		if g.Fleets != nil && len(g.Fleets) == 0 {
			errs = append(errs, fmt.Errorf("oidc_roles %q: fleets is empty; leave it out to act on every fleet", v))
		}
		if slices.Contains(g.Fleets, "") {
			errs = append(errs, fmt.Errorf("oidc_roles %q: a fleet without a name", v))
		}
	}
	return errors.Join(errs...)
}

// Resolve returns what the claim's values grant together: the highest role
// any of them maps to, on the union of the fleets of the values that map to
// that role (nil, every fleet, when one of them is unscoped). Values the
// mapping does not name grant nothing; none named gives access.None.
func (r Roles) Resolve(values []string) (access.Role, []string) {
	best := access.None
	var fleets []string
	unscoped := false
	for _, v := range values {
		g, ok := r[v]
		if !ok {
			continue
		}
		role, err := access.ParseRole(g.Role)
		if err != nil {
			continue
		}
		switch {
		case role < best:
			continue
		case role > best:
			best, fleets, unscoped = role, nil, false
		}
		if g.Fleets == nil {
			unscoped = true
		}
		fleets = append(fleets, g.Fleets...)
	}
	if best == access.None || unscoped {
		return best, nil
	}
	slices.Sort(fleets)
	return best, append([]string{}, slices.Compact(fleets)...) // scoped, even to no fleet
}
