package access

import (
	"fmt"
	"strings"
)

// Scope is what a rule's request acts on.
type Scope int

const (
	// Global: nothing in particular (the estate, users, tokens). A
	// principal scoped to fleets may read it, never change it.
	Global Scope = iota
	// Fleet: the fleet the {name} path value names.
	Fleet
	// Agent: the agent the {uid} path value names, within its fleet.
	Agent
	// Grant: rights given to a user or an API key. A principal scoped to
	// fleets may grant too; what it grants must be within what it has,
	// which the accounts check (Principal.Covers).
	Grant
)

// Rule is what one route requires.
type Rule struct {
	// Public routes need no principal (health, login, static files).
	Public bool
	// Need is the lowest role allowed.
	Need Role
	// Scope is what a change acts on; reads are global whatever it says.
	Scope Scope
	// Change marks a request that changes state: it is audited, outcome
	// and refusal alike, under Action.
	Change bool
	Action string
	// Delegated marks a console action carried out by an admin API
	// request it makes in process: that request is audited, the console's
	// own only when the console refuses it.
	Delegated bool
	// Streamed marks a change whose answer is too large to hold (a
	// backup): it is audited when it begins, then streamed.
	Streamed bool
}

func read(need Role) Rule { return Rule{Need: need} }

func change(need Role, scope Scope, action string) Rule {
	return Rule{Need: need, Scope: scope, Change: true, Action: action}
}

func console(need Role, scope Scope, action string) Rule {
	return Rule{Need: need, Scope: scope, Change: true, Action: action, Delegated: true}
}

func streamed(need Role, scope Scope, action string) Rule {
	return Rule{Need: need, Scope: scope, Change: true, Action: action, Streamed: true}
}

var public = Rule{Public: true}

// Rules is every route of the admin API and the console, by the pattern
// it is registered with, and what it requires. A route without a rule is
// refused to everyone (and registering one fails at start); the tests walk
// both routers against this table.
//
// Configuration bodies and render contexts are secrets to a viewer: a
// collector's configuration carries exporters' credentials, its context
// the environment variables its updater publishes.
var Rules = map[string]Rule{
	// Health and metrics.
	"GET /healthz": public,
	"GET /readyz":  public,
	"GET /metrics": public, // as Prometheus scrapes it: counts and states, no secrets
	// The API's own description, read by tools before they hold a credential.
	"GET /api/v1/openapi.json": public,

	// Runtime profiles: a profile costs CPU and shows the process's insides.
	"GET /debug/pprof/":        read(Admin),
	"GET /debug/pprof/cmdline": read(Admin),
	"GET /debug/pprof/profile": read(Admin),
	"GET /debug/pprof/symbol":  read(Admin),
	"GET /debug/pprof/trace":   read(Admin),

	// Agents.
	"GET /api/v1/agents":                     read(Viewer),
	"GET /api/v1/agents/{uid}":               read(Viewer),
	"DELETE /api/v1/agents/{uid}":            change(Operator, Agent, "agent.forget"),
	"GET /api/v1/agents/{uid}/config":        read(Operator),
	"GET /api/v1/agents/{uid}/context":       read(Operator),
	"POST /api/v1/agents/{uid}/retry":        change(Operator, Agent, "agent.offer.retry"),
	"POST /api/v1/agents/{uid}/config/retry": change(Operator, Agent, "agent.config.retry"),
	"GET /api/v1/pairings":                   read(Viewer),
	"GET /api/v1/summary":                    read(Viewer),
	"GET /api/v1/cluster":                    read(Viewer),

	// Fleets and the estate.
	"GET /api/v1/fleets":                      read(Viewer),
	"GET /api/v1/fleets/{name}/variables":     read(Viewer),
	"POST /api/v1/fleets/{name}/pause":        change(Operator, Fleet, "fleet.pause"),
	"POST /api/v1/fleets/{name}/resume":       change(Operator, Fleet, "fleet.resume"),
	"POST /api/v1/fleets/{name}/retry":        change(Operator, Fleet, "fleet.offers.retry"),
	"POST /api/v1/fleets/{name}/config/retry": change(Operator, Fleet, "fleet.config.retry"),
	"GET /api/v1/estate":                      read(Viewer),
	"POST /api/v1/estate/reload":              change(Operator, Global, "estate.reload"),
	// A plan changes nothing (it is not audited), and shows configurations.
	"POST /api/v1/estate/plan": read(Operator),

	// Enrollment tokens, users, API keys, console links.
	"GET /api/v1/tokens":          read(Viewer),
	"POST /api/v1/tokens":         change(Admin, Global, "token.create"),
	"DELETE /api/v1/tokens/{id}":  change(Admin, Global, "token.revoke"),
	"GET /api/v1/users":           read(Viewer),
	"POST /api/v1/users":          change(Admin, Grant, "user.create"),
	"PATCH /api/v1/users/{name}":  change(Admin, Grant, "user.update"),
	"DELETE /api/v1/users/{name}": change(Admin, Grant, "user.delete"),
	"GET /api/v1/apikeys":         read(Viewer),
	"POST /api/v1/apikeys":        change(Admin, Grant, "apikey.create"),
	"DELETE /api/v1/apikeys/{id}": change(Admin, Grant, "apikey.revoke"),
	"POST /api/v1/console/links":  change(Admin, Global, "console.link"),
	"GET /api/v1/whoami":          read(Viewer),

	// The audit trail: read by everyone, changed by no route.
	"GET /api/v1/audit":        read(Viewer),
	"GET /api/v1/audit/verify": read(Viewer),

	// A backup holds every secret's digest and the whole trail.
	"POST /api/v1/backup": streamed(Admin, Global, "backup.create"),

	// The notifications' outbox: what was sent to the webhooks, and why not.
	"GET /api/v1/notifications/deliveries": read(Viewer),

	// The console: its pages read, its actions call the admin API.
	"GET /static/":                    public,
	"GET /login":                      public,
	"POST /login":                     public,
	"GET /login/oidc":                 public, // begins a sign-in with the OpenID Connect provider
	"GET /login/oidc/callback":        public, // the provider's answer, checked against the browser's attempt
	"POST /logout":                    read(Viewer),
	"GET /{$}":                        read(Viewer),
	"GET /agents":                     read(Viewer),
	"GET /agents/{uid}":               read(Viewer),
	"POST /agents/{uid}/retry":        console(Operator, Agent, "agent.offer.retry"),
	"POST /agents/{uid}/config/retry": console(Operator, Agent, "agent.config.retry"),
	"GET /fleets":                     read(Viewer),
	"POST /fleets/{name}/{op}":        console(Operator, Fleet, "fleet.operate"),
	"GET /pairings":                   read(Viewer),
	"GET /tokens":                     read(Viewer),
	"POST /tokens":                    console(Admin, Global, "token.create"),
	"POST /tokens/{id}/revoke":        console(Admin, Global, "token.revoke"),
	"GET /estate":                     read(Viewer),
	"POST /estate/reload":             console(Operator, Global, "estate.reload"),
	"GET /audit":                      read(Viewer),
	"GET /notifications":              read(Viewer),
	"GET /events":                     read(Viewer),
	"/":                               read(Viewer),
}

// Decision is what Check decides for one request.
type Decision struct {
	Allowed bool
	// Need is the role the rule asks for (for a refusal's answer).
	Need Role
	// Reason says why a request is refused.
	Reason string
}

// Check decides whether p may make a request under rule, whose target is
// in fleet (Fleet and Agent scopes; "" when the agent is in no fleet).
func Check(p Principal, rule Rule, fleet string) Decision {
	if rule.Public {
		return Decision{Allowed: true}
	}
	if !p.Role.Allows(rule.Need) {
		return Decision{Need: rule.Need, Reason: fmt.Sprintf("this needs the %s role; %s has %s", rule.Need, p.Actor(), p.Role)}
	}
	if !rule.Change || !p.Scoped() {
		return Decision{Allowed: true, Need: rule.Need}
	}
	scope := strings.Join(p.Fleets, ", ")
	switch rule.Scope {
	case Grant:
		return Decision{Allowed: true, Need: rule.Need}
	case Fleet, Agent:
		if fleet != "" && p.InFleet(fleet) {
			return Decision{Allowed: true, Need: rule.Need}
		}
		what := "fleet " + fleet
		if fleet == "" {
			what = "an agent in no fleet"
		} else if rule.Scope == Agent {
			what = "an agent of fleet " + fleet
		}
		return Decision{Need: rule.Need, Reason: fmt.Sprintf("%s acts on fleets %s only, not on %s", p.Actor(), scope, what)}
	default:
		return Decision{Need: rule.Need, Reason: fmt.Sprintf("%s acts on fleets %s only; this changes what no fleet holds", p.Actor(), scope)}
	}
}

// Actor names p in the audit trail and in messages: a user by name, any
// other principal by its kind and name.
func (p Principal) Actor() string {
	switch p.Kind {
	case KindUser:
		return p.Name
	case KindAdminToken:
		return AdminTokenName
	}
	return p.Kind + ":" + p.Name
}
