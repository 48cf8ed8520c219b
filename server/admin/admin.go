// Package admin is myriarchd's operator API: JSON over HTTP on the admin
// listener, every route behind the admin bearer token except /metrics,
// /healthz and /readyz.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/apispec"
	"github.com/myriarch/myriarch/server/backpressure"
	"github.com/myriarch/myriarch/server/credentials"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/tokens"
)

// Disconnector closes agent connections of a credential.
type Disconnector interface {
	DisconnectCredential(cred store.Credential) int
}

// Deps are what the API acts on.
type Deps struct {
	AdminToken   string
	Tokens       *credentials.Book
	Registry     *registry.Registry
	Disconnector Disconnector
	// ReloadEstate reloads the estate; it says what it loaded (the
	// revision, and the commit's author for a Git estate) or tried to,
	// and returns the load error, if any
	// (the previous estate stays in force).
	ReloadEstate func() (string, error)
	// EstateStatus is GET /api/v1/estate: the revision in force and the
	// last reload's problems.
	EstateStatus func() any
	Metrics      http.Handler
	// Ready names what keeps the server from being ready (GET /readyz);
	// nil or an empty answer is ready.
	Ready func() []string
	Log   *slog.Logger
	// OnTokenRevoked is told after a revocation (pairing re-evaluation).
	OnTokenRevoked func(cred store.Credential)
	// Now is the clock of the budget of wrong tokens and of their log
	// lines (tests).
	Now func() time.Time
	// Keys authenticates API keys (nil: only the admin token is taken).
	Keys Keys
	// FleetOfAgent names the fleet an agent belongs to ("" for none), for
	// the changes of a principal scoped to fleets.
	FleetOfAgent func(uuid.UUID) string
	// Audit writes one record of the audit trail (nil: none is kept).
	Audit func(context.Context, AuditEntry) error
	// Spec is the API document: served at /api/v1/openapi.json, and each
	// request to a route it documents is checked against it before it is
	// served (400 naming the field). Nil: neither.
	Spec *apispec.Spec
	// CheckResponse, when set with Spec, is told of each answer of a
	// documented route that does not match the document (the tests).
	CheckResponse func(pattern string, err error)
}

// Requests with a wrong or no admin token, per source address (an IPv4
// address or an IPv6 /64): authBurst at once, then one per authRefill;
// past that they are answered 429 (see authenticate).
const (
	authBurst  = 10
	authRefill = 6 * time.Second
)

// API is the admin HTTP handler.
type API struct {
	d          Deps
	mux        *http.ServeMux
	decorators []Decorator
	filters    map[string]FilterFunc
	summaries  map[string]func() any
	fallback   http.Handler             // serves what no route matches (the console)
	patterns   []string                 // the routes registered
	failures   *backpressure.Keyed      // requests with a wrong admin token per source
	refusals   *backpressure.RefusalLog // their log lines
}

// New builds the routes. Features add their own with Handle.
func New(d Deps) *API {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	a := &API{d: d, mux: http.NewServeMux(),
		failures: backpressure.NewKeyed(backpressure.KeyedOptions{Rate: 1 / authRefill.Seconds(), Burst: authBurst, Now: d.Now}),
		refusals: backpressure.NewRefusalLog(backpressure.RefusalLogOptions{Log: d.Log, Level: slog.LevelWarn,
			First:  "admin API request refused; further refusals from this source are counted for a minute",
			More:   "admin API requests refused from one source",
			Others: "admin API requests refused from further sources",
			Now:    d.Now}),
	}
	a.Handle("POST /api/v1/tokens", a.createToken)
	a.Handle("GET /api/v1/tokens", a.listTokens)
	a.Handle("DELETE /api/v1/tokens/{id}", a.revokeToken)
	a.Handle("GET /api/v1/agents", a.listAgents)
	a.Handle("GET /api/v1/agents/{uid}", a.getAgent)
	a.Handle("DELETE /api/v1/agents/{uid}", a.forgetAgent)
	a.Handle("POST /api/v1/estate/reload", a.reloadEstate)
	a.Handle("GET /api/v1/estate", a.getEstate)
	a.Handle("GET /api/v1/summary", a.summary)
	if d.Spec != nil {
		a.Handle("GET /api/v1/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(d.Spec.JSON())
		})
	}
	a.builtinFilters()
	if d.Metrics != nil {
		a.Handle("GET /metrics", d.Metrics.ServeHTTP)
	}
	a.Handle("GET /healthz", healthz)
	a.Handle("GET /readyz", a.readyz)
	a.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if a.fallback != nil && !strings.HasPrefix(r.URL.Path, "/api/") {
			a.fallback.ServeHTTP(w, r)
			return
		}
		WriteError(w, http.StatusNotFound, "no such route: "+r.Method+" "+r.URL.Path)
	})
	return a
}

// SetFallback serves the requests no route matches, except under /api/
// (which stay JSON 404s): the browser console. Call before serving.
func (a *API) SetFallback(h http.Handler) { a.fallback = h }

// AddDecorator adds fields to every agent JSON.
func (a *API) AddDecorator(d Decorator) { a.decorators = append(a.decorators, d) }

func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// WriteJSON writes v with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// ErrorBody is every error response.
type ErrorBody struct {
	Error   string   `json:"error"`
	Details []string `json:"details,omitempty"`
}

// WriteError writes an ErrorBody; a joined error becomes one detail per part.
func WriteError(w http.ResponseWriter, status int, msg string, details ...error) {
	b := ErrorBody{Error: msg}
	for _, d := range details {
		b.Details = append(b.Details, splitJoined(d)...)
	}
	WriteJSON(w, status, b)
}

func splitJoined(err error) []string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, splitJoined(e)...)
		}
		return out
	}
	return []string{err.Error()}
}

type tokenRequest struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

type tokenJSON struct {
	tokens.Token
	Secret string `json:"token,omitempty"`
}

func (a *API) createToken(w http.ResponseWriter, r *http.Request) {
	var req tokenRequest
	if !DecodeJSON(w, r, &req) {
		return
	}
	t, secret, err := a.d.Tokens.Create(r.Context(), req.Name, req.Labels)
	var invalid *credentials.InvalidError
	switch {
	case errors.Is(err, store.ErrConflict):
		WriteError(w, http.StatusConflict, err.Error())
		return
	case errors.As(err, &invalid):
		WriteError(w, http.StatusBadRequest, "invalid token request", invalid.Err)
		return
	case err != nil:
		WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	a.d.Log.Info("token created", "id", t.ID, "name", t.Name)
	NoteAudit(r, "tokens/"+t.ID, "token "+t.Name+labelsNote(t.Labels))
	WriteJSON(w, http.StatusCreated, tokenJSON{Token: t, Secret: secret})
}

func (a *API) listTokens(w http.ResponseWriter, _ *http.Request) {
	list := a.d.Tokens.List()
	out := make([]tokenJSON, 0, len(list))
	for _, t := range list {
		out = append(out, tokenJSON{Token: t})
	}
	WriteJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

func (a *API) revokeToken(w http.ResponseWriter, r *http.Request) {
	t, err := a.d.Tokens.Revoke(r.Context(), r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		WriteError(w, http.StatusNotFound, err.Error())
		return
	}
	if err != nil {
		WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	cred := store.Credential{Kind: credentials.KindToken, ID: t.ID}
	n := 0
	if a.d.Disconnector != nil {
		n = a.d.Disconnector.DisconnectCredential(cred)
	}
	if a.d.OnTokenRevoked != nil {
		a.d.OnTokenRevoked(cred)
	}
	a.d.Log.Info("token revoked", "id", t.ID, "name", t.Name, "disconnected", n)
	NoteAudit(r, "", fmt.Sprintf("token %s, %d agents disconnected", t.Name, n))
	WriteJSON(w, http.StatusOK, map[string]any{"token": tokenJSON{Token: t}, "disconnected": n})
}

// AgentJSON renders one agent as the API shows it (for features' own routes).
func (a *API) AgentJSON(ag *registry.Agent) *Agent {
	return toJSON(ag, a.d.Tokens.TokenName, a.decorators)
}

func (a *API) getAgent(w http.ResponseWriter, r *http.Request) {
	uid, err := uuid.Parse(r.PathValue("uid"))
	if err != nil {
		WriteError(w, http.StatusNotFound, "no agent "+r.PathValue("uid")+": not a UUID")
		return
	}
	ag, ok := a.d.Registry.Get(uid)
	if !ok {
		WriteError(w, http.StatusNotFound, "no agent "+uid.String())
		return
	}
	j := toJSON(&ag, a.d.Tokens.TokenName, a.decorators)
	j.LabelSources, _ = a.d.Registry.LabelSources(uid)
	WriteJSON(w, http.StatusOK, j)
}

// Forgotten is the answer of DELETE /api/v1/agents/{uid}.
type Forgotten struct {
	InstanceUID uuid.UUID `json:"instanceUid"`
	Forgotten   bool      `json:"forgotten"`
}

// forgetAgent removes an offline agent with its history (registry.Forget).
func (a *API) forgetAgent(w http.ResponseWriter, r *http.Request) {
	uid, err := uuid.Parse(r.PathValue("uid"))
	if err != nil {
		WriteError(w, http.StatusNotFound, "no agent "+r.PathValue("uid")+": not a UUID")
		return
	}
	err = a.d.Registry.Forget(uid)
	switch {
	case errors.Is(err, registry.ErrUnknownAgent):
		WriteError(w, http.StatusNotFound, "no agent "+uid.String())
		return
	case errors.Is(err, registry.ErrAgentOnline):
		WriteError(w, http.StatusConflict, err.Error())
		return
	case err != nil:
		WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	NoteAudit(r, "agents/"+uid.String(), "agent forgotten")
	WriteJSON(w, http.StatusOK, Forgotten{InstanceUID: uid, Forgotten: true})
}

func (a *API) getEstate(w http.ResponseWriter, _ *http.Request) {
	if a.d.EstateStatus == nil {
		WriteJSON(w, http.StatusOK, map[string]any{"revision": nil, "loadedAt": nil, "errors": []any{}})
		return
	}
	WriteJSON(w, http.StatusOK, a.d.EstateStatus())
}

func (a *API) reloadEstate(w http.ResponseWriter, r *http.Request) {
	if a.d.ReloadEstate == nil {
		WriteError(w, http.StatusConflict, "no estate configured (start myriarchd with --estate DIR)")
		return
	}
	what, err := a.d.ReloadEstate()
	if err != nil {
		NoteAudit(r, "estate", what+": "+err.Error())
		WriteJSON(w, http.StatusUnprocessableEntity, estateError(err))
		return
	}
	NoteAudit(r, "estate", what)
	WriteJSON(w, http.StatusOK, map[string]any{"reloaded": true})
}

// ErrUnavailable marks an action this instance could not have performed
// now (the instance that leads the store did not answer): 503, try again.
var ErrUnavailable = errors.New("unavailable")

// WriteActionError answers an operator action that failed: 503 when the
// action could not be performed now (ErrUnavailable), otherwise notFound
// (the target does not exist).
func WriteActionError(w http.ResponseWriter, notFound int, err error) {
	if errors.Is(err, ErrUnavailable) {
		w.Header().Set("Retry-After", "5")
		WriteError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	WriteError(w, notFound, err.Error())
}
