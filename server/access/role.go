package access

import (
	"encoding/json"
	"fmt"
)

// Role is what a principal may do; roles are ordered, each allowing what
// the one below it allows.
type Role int

// The roles, lowest first. None is no role: it allows nothing.
const (
	None Role = iota
	// Viewer reads everything except secrets.
	Viewer
	// Operator also pauses and resumes rollouts, retries offers and
	// configurations for an agent or a fleet, and reloads the estate.
	Operator
	// Admin also manages users, API keys, enrollment tokens and settings.
	Admin
)

// Roles lists the roles a principal may have, lowest first.
var Roles = []Role{Viewer, Operator, Admin}

func (r Role) String() string {
	switch r {
	case Viewer:
		return "viewer"
	case Operator:
		return "operator"
	case Admin:
		return "admin"
	}
	return "none"
}

// ParseRole reads a role's name.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if r.String() == s {
			return r, nil
		}
	}
	return None, fmt.Errorf("unknown role %q (viewer, operator or admin)", s)
}

// Allows reports whether r allows what need requires.
func (r Role) Allows(need Role) bool { return r != None && r >= need }

// MarshalJSON writes the role's name.
func (r Role) MarshalJSON() ([]byte, error) { return json.Marshal(r.String()) }

// UnmarshalJSON reads a role's name.
func (r *Role) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a role is a string: %w", err)
	}
	v, err := ParseRole(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}
