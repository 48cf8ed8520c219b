package admin

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"maps"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/backpressure"
)

// Every route is registered with its pattern, and the guard in front of it
// applies the pattern's rule of access.Rules: who the request comes from
// (authenticate), whether that principal may make it (access.Check), and,
// for a change or a refusal, one audit record written before the answer.

// KeySecretPrefix starts every API key's secret.
const KeySecretPrefix = "myrkey_"

// Keys turns an API key's secret into its principal; an error refuses it
// (unknown, revoked, expired), checked against the store on every request
// so a revocation holds at once on every instance.
type Keys interface {
	KeyPrincipal(ctx context.Context, secret string) (access.Principal, error)
}

// AuditEntry is one audit record as the guard knows it; the trail adds
// its id, time and chain.
type AuditEntry struct {
	Actor, Role, Via, Action, Target, Source, RequestID, Outcome, Detail string
}

// Audit outcomes.
const (
	OutcomeOK     = "ok"
	OutcomeDenied = "denied"
	OutcomeError  = "error"
)

// ClientHeader names the client the request comes from: the CLI sends
// "cli", which the audit trail records as the request's via.
const ClientHeader = "X-Myriarch-Client"

// RequestIDHeader carries a request's id: a client's, when it sends a
// plain one, else the server's; answered on every guarded request.
const RequestIDHeader = "X-Request-Id"

var requestIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Handle adds a route: pattern must have a rule in access.Rules.
func (a *API) Handle(pattern string, h http.HandlerFunc) {
	rule, ok := access.Rules[pattern]
	if !ok {
		panic("admin: route " + pattern + " has no rule in access.Rules")
	}
	a.patterns = append(a.patterns, pattern)
	a.mux.Handle(pattern, a.checkedAnswer(pattern, a.guard(pattern, rule, a.checkedRequest(pattern, h))))
}

// Patterns lists the routes registered, in the order they were.
func (a *API) Patterns() []string { return append([]string(nil), a.patterns...) }

// guard serves h under rule.
func (a *API) guard(pattern string, rule access.Rule, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rule.Public {
			h(w, r)
			return
		}
		rid := r.Header.Get(RequestIDHeader)
		if !requestIDRE.MatchString(rid) {
			rid = newRequestID()
		}
		w.Header().Set(RequestIDHeader, rid)
		caller, ok := a.authenticate(w, r, rule, rid)
		if !ok {
			return
		}
		ctx := access.WithCaller(r.Context(), caller)
		r = r.WithContext(context.WithValue(ctx, auditKey{}, &auditNote{}))
		entry := AuditEntry{Actor: caller.Actor(), Role: caller.Role.String(), Via: caller.Via, Action: rule.Action,
			Target: TargetOf(r), Source: SourceOf(r), RequestID: rid}
		if entry.Action == "" {
			entry.Action = "read " + pattern
		}
		fleet := a.fleetOf(r, rule)
		if d := access.Check(caller.Principal, rule, fleet); !d.Allowed {
			entry.Outcome, entry.Detail = OutcomeDenied, d.Reason
			if !a.record(w, entry) {
				return
			}
			WriteJSON(w, http.StatusForbidden, map[string]string{"error": d.Reason, "need": d.Need.String()})
			return
		}
		if !rule.Change || a.d.Audit == nil {
			h(w, r)
			return
		}
		if rule.Streamed {
			// Too large to hold: recorded as begun, then streamed.
			entry.Outcome, entry.Detail = OutcomeOK, "answered as a stream, recorded when it began"
			if a.record(w, entry) {
				h(w, r)
			}
			return
		}
		// A change is answered once its record is written: the answer is
		// held until then.
		buf := newHeldResponse()
		h(buf, r)
		entry.Outcome = OutcomeOK
		if buf.status >= 400 {
			entry.Outcome = OutcomeError
		}
		note := r.Context().Value(auditKey{}).(*auditNote)
		if note.target != "" {
			entry.Target = note.target
		}
		entry.Detail = note.detail
		if entry.Outcome == OutcomeError && entry.Detail == "" {
			entry.Detail = buf.errorMessage()
		}
		if !a.record(w, entry) {
			return
		}
		buf.sendTo(w)
	})
}

// Record writes one audit record (for requests the admin API does not
// see, such as console logins); nil when no trail is kept.
func (a *API) Record(ctx context.Context, e AuditEntry) error {
	if a.d.Audit == nil {
		return nil
	}
	return a.d.Audit(ctx, e)
}

// FleetOfAgent names the fleet an agent belongs to ("" for none).
func (a *API) FleetOfAgent(uid uuid.UUID) string {
	if a.d.FleetOfAgent == nil {
		return ""
	}
	return a.d.FleetOfAgent(uid)
}

// record writes entry to the audit trail; false when it could not, and
// the request is answered 503 saying so.
func (a *API) record(w http.ResponseWriter, e AuditEntry) bool {
	if a.d.Audit == nil {
		return true
	}
	if err := a.d.Audit(context.Background(), e); err != nil {
		a.d.Log.Error("audit record not written", "action", e.Action, "actor", e.Actor, "outcome", e.Outcome, "err", err)
		msg := "the audit trail could not record this request, so it is not answered: " + err.Error()
		if e.Outcome == OutcomeOK || e.Outcome == OutcomeError {
			msg = "the request was carried out (" + e.Outcome + ") but the audit trail could not record it: " + err.Error()
		}
		WriteError(w, http.StatusServiceUnavailable, msg)
		return false
	}
	return true
}

// authenticate finds the request's caller: the console's, carried by the
// context of its in-process requests; the admin token's; or an API key's.
// Otherwise it answers: 401, or 429 with Retry-After once the requests
// with a wrong or no credential from the source address have spent their
// budget; 401s are audited.
//
// The budget does not keep a credential from being guessed: the admin
// token has at least 32 characters and an API key 256 random bits, beyond
// any guessing over the network. It bounds what a flood of wrong tokens
// costs: past the budget each one gets a short 429 telling its client to
// back off, and the refusals are logged once a minute per source with
// their count, never a line per request. So a right credential passes
// whatever its source's budget — behind a reverse proxy every operator
// shares one source address, and one flooding it must not lock the others
// out — and gives its source the whole budget back.
func (a *API) authenticate(w http.ResponseWriter, r *http.Request, rule access.Rule, rid string) (access.Caller, bool) {
	if c, ok := access.CallerFrom(r.Context()); ok {
		return c, true
	}
	via := access.ViaAPI
	if r.Header.Get(ClientHeader) == access.ViaCLI {
		via = access.ViaCLI
	}
	got, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	got = strings.TrimSpace(got)
	src := backpressure.SourceKey(r.RemoteAddr)
	var p access.Principal
	why := "no bearer token"
	switch {
	case !bearer:
	case subtle.ConstantTimeCompare([]byte(got), []byte(a.d.AdminToken)) == 1:
		p = access.Principal{Name: access.AdminTokenName, Kind: access.KindAdminToken, Role: access.Admin}
	case strings.HasPrefix(got, KeySecretPrefix) && a.d.Keys != nil:
		var err error
		if p, err = a.d.Keys.KeyPrincipal(r.Context(), got); err != nil {
			why = err.Error()
		}
	default:
		why = "wrong admin token or API key"
	}
	if p.Role != access.None {
		a.failures.Forget(src)
		return access.Caller{Principal: p, Via: via}, true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="myriarch-admin"`)
	if !a.failures.Allow(src) {
		a.refusals.Refused(src, "remote", r.RemoteAddr, "reason", why, "throttled", true)
		w.Header().Set("Retry-After", strconv.Itoa(int(authRefill/time.Second)))
		WriteError(w, http.StatusTooManyRequests, "too many requests without a valid credential from this address; try again later")
		return access.Caller{}, false
	}
	a.refusals.Refused(src, "remote", r.RemoteAddr, "reason", why)
	action := rule.Action
	if action == "" {
		action = "read " + r.Pattern
	}
	if a.record(w, AuditEntry{Via: via, Action: action, Target: TargetOf(r), Source: SourceOf(r), RequestID: rid,
		Outcome: OutcomeDenied, Detail: "not authenticated: " + why}) {
		WriteError(w, http.StatusUnauthorized, "an admin token or API key is required: "+why)
	}
	return access.Caller{}, false
}

// fleetOf is the fleet a change under rule acts on: the {name} path value,
// or the fleet of the agent the {uid} path value names.
func (a *API) fleetOf(r *http.Request, rule access.Rule) string {
	switch rule.Scope {
	case access.Fleet:
		return r.PathValue("name")
	case access.Agent:
		uid, err := uuid.Parse(r.PathValue("uid"))
		if err != nil {
			return ""
		}
		return a.FleetOfAgent(uid)
	}
	return ""
}

// TargetOf is what a request acts on, for the audit trail: its path below
// /api/v1/ (or the console's), which names the object (agents/UID,
// fleets/NAME/pause, tokens/ID).
func TargetOf(r *http.Request) string {
	t := strings.TrimPrefix(r.URL.Path, "/api/v1/")
	t = strings.TrimPrefix(t, "/")
	if len(t) > 256 {
		t = t[:256]
	}
	return t
}

// SourceOf is the address a request comes from, for the audit trail.
func SourceOf(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// auditNote is what a handler adds to its request's audit record.
type auditNote struct{ target, detail string }

type auditKey struct{}

// NoteAudit sets what r's audit record says it acted on (target, when not
// "") and its detail: a created token's id and name, say. Secrets never go
// in it.
func NoteAudit(r *http.Request, target, detail string) {
	n, ok := r.Context().Value(auditKey{}).(*auditNote)
	if !ok {
		return
	}
	if target != "" {
		n.target = target
	}
	n.detail = detail
}

// CallerOf returns the caller of a guarded request.
func CallerOf(r *http.Request) access.Caller {
	c, _ := access.CallerFrom(r.Context())
	return c
}

// labelsNote is how an audit record's detail names labels: ", labels
// k=v,…" sorted by key, "" for none.
func labelsNote(labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(labels))
	for i, k := range keys {
		keys[i] = k + "=" + labels[k]
	}
	return ", labels " + strings.Join(keys, ",")
}
