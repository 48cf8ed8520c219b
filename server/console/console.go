// Package console is myriarchd's browser console, served on the admin
// listener at /: an overview of the estate, the agents with server-side
// paging, sorting and filtering, each agent's page, fleets, pairings and
// enrollment tokens, updated live over Server-Sent Events.
//
// Every page reads, and every action changes, through the admin API's own
// handler (in process, with the admin token): the console has no other way
// to the registry, the offers or the configuration than the CLI has.
// Operators log in with a user name and password, the admin token, a
// one-time login link or an OpenID Connect provider (see oidclogin); the
// session is an HttpOnly, SameSite=Strict cookie, every state-changing
// request carries a CSRF token, and pages run under a Content-Security-Policy
// without unsafe-inline. Templates are html/template, assets are embedded;
// nothing is fetched from elsewhere.
package console

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/backpressure"
	"github.com/myriarch/myriarch/server/oidclogin"
	"github.com/myriarch/myriarch/server/store"
)

// Options configure a Console.
type Options struct {
	// API is the admin API the console reads and acts through.
	API *admin.API
	// AdminToken signs an operator in as the admin token.
	AdminToken string
	// Store keeps sessions and one-time login links.
	Store store.Accounts
	// Users signs users in and gives their current principal.
	Users Users
	// OIDC signs operators in with an OpenID Connect provider (nil: none).
	OIDC *oidclogin.RP
	Log  *slog.Logger
	// LiveInterval is the most often a live view is told to refresh (default 1s).
	LiveInterval time.Duration
	// AgentCount is the number of agents: views that refresh on any change
	// (lists, overview) refresh once per LiveInterval per 20 000 agents.
	AgentCount func() int
	// Now is the clock (tests).
	Now func() time.Time
}

// Console is the browser console. Its methods are safe for concurrent use.
type Console struct {
	opts     Options
	log      *slog.Logger
	api      *apiClient
	sessions *sessions
	hub      *hub
	streams  *streamLimit
	mux      *http.ServeMux
	patterns []string            // the routes registered
	logins   *backpressure.Keyed // failed logins per source
	loginLog *backpressure.Keyed // refusals logged per source
}

// New builds the console; Mount puts it on the admin API; Close ends it.
func New(opts Options) *Console {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.LiveInterval <= 0 {
		opts.LiveInterval = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Console{
		opts:     opts,
		log:      opts.Log,
		api:      &apiClient{h: opts.API},
		sessions: newSessions(opts.Store, opts.Users, opts.Now),
		hub:      newHub(opts.LiveInterval),
		streams:  newStreamLimit(),
		mux:      http.NewServeMux(),
		logins:   backpressure.NewKeyed(backpressure.KeyedOptions{Rate: 1 / loginRefill.Seconds(), Burst: loginBurst, Now: opts.Now}),
		loginLog: backpressure.NewKeyed(backpressure.KeyedOptions{Rate: 1.0 / 60, Burst: 1, Now: opts.Now}),
	}
	c.routes()
	return c
}

// Mount serves the console at / of the admin API's listener (every path
// outside /api/ that no API route takes) and adds the login-link route.
func (c *Console) Mount() {
	c.opts.API.SetFallback(c)
	c.opts.API.Handle("POST /api/v1/console/links", c.createLink)
}

// Changed is the registry watcher: something about uid changed.
func (c *Console) Changed(uid uuid.UUID) { c.hub.change(uid) }

// ChangedAll tells every live view to refresh (e.g. after an estate reload).
func (c *Console) ChangedAll() { c.hub.changeAll() }

// OnAgentMessage implements the OpAMP server's hook: statuses the registry
// does not keep (package and remote config statuses, health, effective
// config) change what an agent's page shows. It runs after the features'
// hooks have applied the message.
func (c *Console) OnAgentMessage(uid uuid.UUID, msg *protobufs.AgentToServer, _ *protobufs.ServerToAgent) {
	if msg.PackageStatuses != nil || msg.RemoteConfigStatus != nil || msg.Health != nil || msg.EffectiveConfig != nil {
		c.hub.change(uid)
	}
}

// Close ends every live stream and session; call before shutting the
// listener down, so open streams do not hold it.
func (c *Console) Close() {
	c.sessions.closeAll()
	c.hub.close()
}

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	c.mux.ServeHTTP(w, r)
}

// Users is what the console asks of the accounts: a sign-in with a
// password, and a user's principal as it is now.
type Users interface {
	UserLookup
	SignIn(ctx context.Context, name, password string) (access.Principal, error)
}

func (c *Console) routes() {
	c.public("GET /static/", serveAsset)
	c.public("GET /login", c.loginPage)
	c.public("POST /login", c.login)
	c.public("GET /login/oidc", c.oidcBegin)
	c.public("GET /login/oidc/callback", c.oidcCallback)
	c.action("POST /logout", c.logout)
	c.page("GET /{$}", c.overview)
	c.page("GET /agents", c.agents)
	c.page("GET /agents/{uid}", c.agent)
	c.action("POST /agents/{uid}/retry", c.agentRetry)
	c.action("POST /agents/{uid}/config/retry", c.agentConfigRetry)
	c.page("GET /fleets", c.fleets)
	c.action("POST /fleets/{name}/{op}", c.fleetAction)
	c.page("GET /pairings", c.pairings)
	c.page("GET /tokens", c.tokens)
	c.action("POST /tokens", c.createToken)
	c.action("POST /tokens/{id}/revoke", c.revokeToken)
	c.page("GET /estate", c.estatePage)
	c.action("POST /estate/reload", c.estateReload)
	c.page("GET /audit", c.audit)
	c.page("GET /notifications", c.notifications)
	c.live("GET /events", c.events)
	c.page("/", func(w http.ResponseWriter, r *http.Request, s *session) {
		c.fail(w, r, s, http.StatusNotFound, "No such page: "+r.URL.Path)
	})
}

// securityHeaders are set on every console answer: scripts, styles and
// everything else only from the console itself, no inline code, no framing.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}
