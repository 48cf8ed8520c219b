package access

import (
	"context"
	"slices"
)

// Kinds of principal.
const (
	KindUser       = "user"        // a local account with a password
	KindOIDC       = "oidc"        // an account of the OpenID Connect provider
	KindAPIKey     = "apikey"      // an API key, for scripts
	KindAdminToken = "admin-token" // the break-glass admin token
)

// AdminTokenName is the principal the admin token acts as.
const AdminTokenName = "admin-token"

// Principal is who makes a request: its name (a user's name, an API key's
// id, "admin-token"), its kind, its role and the fleets the role is scoped
// to (nil: every fleet). Reads stay global whatever the scope.
type Principal struct {
	Name   string   `json:"name"`
	Kind   string   `json:"kind"`
	Role   Role     `json:"role"`
	Fleets []string `json:"fleets,omitempty"`
}

// Scoped reports whether the principal acts on some fleets only.
func (p Principal) Scoped() bool { return p.Fleets != nil }

// InFleet reports whether p may act on fleet (any fleet when unscoped).
func (p Principal) InFleet(fleet string) bool { return !p.Scoped() || slices.Contains(p.Fleets, fleet) }

// Covers reports whether p has at least the rights of q: a role at least
// as high, on every fleet q may act on. A principal never grants more than
// it has (an API key it creates, a user it makes).
func (p Principal) Covers(q Principal) bool {
	if !p.Role.Allows(q.Role) {
		return false
	}
	if !p.Scoped() {
		return true
	}
	if !q.Scoped() {
		return false
	}
	for _, f := range q.Fleets {
		if !p.InFleet(f) {
			return false
		}
	}
	return true
}

// Via says how a request reached the server, for the audit trail.
const (
	ViaAPI     = "api"
	ViaConsole = "console"
	ViaCLI     = "cli"
	ViaEstate  = "estate"
)

type principalKey struct{}

// Caller is a request's principal and how it came.
type Caller struct {
	Principal
	Via string
}

// WithCaller returns ctx carrying c. Only the server sets it: the console
// for its in-process calls of the admin API (a request from the network
// cannot carry a context value), the admin API once it authenticated a
// request.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, principalKey{}, c)
}

// CallerFrom returns the caller ctx carries.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(principalKey{}).(Caller)
	return c, ok
}
