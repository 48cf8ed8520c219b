package configs

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/configrender"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/offers"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/rollout"
)

// Assignment is an agent's "assignment" JSON: the fleet and target version
// of the package rollout with the configuration's hashes and sync state.
type Assignment struct {
	rollout.Assignment
	Revision  *string `json:"revision"`
	Blueprint *string `json:"blueprint"`
	Assigned  *string `json:"assigned"`
	Desired   *string `json:"desired"`
	Failed    *string `json:"failed"`
	// FailedReason says why the failed hash failed: the agent's FAILED
	// message, or the timeout that failed it without one.
	FailedReason *string        `json:"failedReason"`
	Reported     ReportedConfig `json:"reported"`
	SyncState    string         `json:"syncState"`
	// Context says what the render read: "attributes" (the attribute
	// view) or "attributes+updater" (with the linked updater's providers).
	Context *string `json:"context"`
	// Warnings are what the assigned configuration leaves out (never null).
	Warnings []configrender.Warning `json:"warnings"`
}

// ReportedConfig is what the agent last reported about its remote config.
type ReportedConfig struct {
	Hash   *string `json:"hash"`
	Status string  `json:"status"`
	Error  *string `json:"error"`
}

// WriteFields implements admin.FieldWriter.
func (a Assignment) WriteFields(o *admin.Object) {
	a.Assignment.WriteFields(o)
	o.StringPtr("revision", a.Revision)
	o.StringPtr("blueprint", a.Blueprint)
	o.StringPtr("assigned", a.Assigned)
	o.StringPtr("desired", a.Desired)
	o.StringPtr("failed", a.Failed)
	o.StringPtr("failedReason", a.FailedReason)
	o.Any("reported", a.Reported)
	o.String("syncState", a.SyncState)
	o.StringPtr("context", a.Context)
	ws := a.Warnings
	if ws == nil {
		ws = []configrender.Warning{}
	}
	o.Any("warnings", ws)
}

// WriteFields implements admin.FieldWriter.
func (r ReportedConfig) WriteFields(o *admin.Object) {
	o.StringPtr("hash", r.Hash)
	o.String("status", r.Status)
	o.StringPtr("error", r.Error)
}

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// decorateLocked fills the assignment; caller holds e.mu. It runs after
// the offers engine's decorator and extends the assignment that one set.
func (e *Engine) decorateLocked(a *registry.Agent, j *admin.Agent) {
	if a.Kind != registry.KindCollector && a.Kind != registry.KindBridge {
		return
	}
	out := Assignment{SyncState: SyncNone, Reported: ReportedConfig{Status: StatusUnset}, Warnings: []configrender.Warning{}}
	if pkg, ok := j.Assignment.(offers.Assignment); ok {
		out.Fleet, out.TargetVersion, out.Error = pkg.Fleet, pkg.TargetVersion, pkg.Error
	}
	if r := e.records[a.UID]; r != nil {
		if out.Fleet == nil {
			out.Fleet = strp(r.fleet)
		}
		if r.err != "" {
			// The configuration's error: a package offer's problem is on
			// the offer.
			out.Error = strp(r.err)
		}
		out.Revision, out.Blueprint = strp(r.revision), strp(r.blueprint)
		out.Assigned, out.Desired, out.Failed = strp(r.assigned), strp(r.desired), strp(r.failedHash())
		if out.Failed != nil {
			out.FailedReason = strp(r.failedWhy)
		}
		out.Reported = ReportedConfig{Hash: strp(r.reported.Hash), Status: r.reported.Status, Error: strp(r.reported.Error)}
		if out.Reported.Status == "" {
			out.Reported.Status = StatusUnset
		}
		out.SyncState = r.syncState()
		if r.assigned != "" || r.err != "" {
			out.Context = strp(r.source)
		}
		if r.warnings != nil {
			out.Warnings = r.warnings
		}
	}
	j.Assignment = out
}

// hasWarnings reports whether an agent's configuration leaves something out.
func (e *Engine) hasWarnings(uid uuid.UUID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.records[uid]
	return r != nil && len(r.warnings) > 0
}

// SyncState is an agent's sync state (none for agents the engine does not configure).
func (e *Engine) SyncState(uid uuid.UUID) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.records[uid]; r != nil {
		return r.syncState()
	}
	return SyncNone
}

var hashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Routes adds the configuration routes to the admin API. Add them after
// the offers engine's, so the assignment it sets is extended.
func (e *Engine) Routes(api *admin.API) {
	api.AddDecorator(admin.LockedDecorator{Mu: &e.mu, Locked: e.decorateLocked})
	e.operatorRoutes(api)
	api.AddFilter("configWarnings", func(v string) (func(a *registry.Agent) bool, error) {
		want, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("configWarnings must be true or false, got %q", v)
		}
		return func(a *registry.Agent) bool {
			return (a.Kind == registry.KindCollector || a.Kind == registry.KindBridge) && e.hasWarnings(a.UID) == want
		}, nil
	})
	api.AddFilter("syncState", func(v string) (func(a *registry.Agent) bool, error) {
		switch v {
		case SyncNone, SyncInSync, SyncPending, SyncFailed, SyncDrift:
		default:
			return nil, fmt.Errorf("syncState must be one of none, in_sync, pending, failed, drift, got %q", v)
		}
		return func(a *registry.Agent) bool {
			return (a.Kind == registry.KindCollector || a.Kind == registry.KindBridge) && e.SyncState(a.UID) == v
		}, nil
	})
	api.Handle("GET /api/v1/agents/{uid}/config", e.getConfig)
	api.Handle("GET /api/v1/agents/{uid}/context", e.getContext)
	api.Handle("GET /api/v1/fleets/{name}/variables", e.fleetVariables)
	api.AgentAction(e.actions, "/api/v1/agents/{uid}/config/retry", OpRetry, "configured agent", e.Retry)
}

// getConfig answers the agent's desired body, or with ?hash= another of
// its own (see record.owns): never another agent's configuration, even one
// this agent reported.
func (e *Engine) getConfig(w http.ResponseWriter, r *http.Request) {
	uid, err := uuid.Parse(r.PathValue("uid"))
	if err != nil {
		admin.WriteError(w, http.StatusBadRequest, "not an instance UID: "+r.PathValue("uid"))
		return
	}
	want := r.URL.Query().Get("hash")
	if want != "" && !hashRE.MatchString(want) {
		admin.WriteError(w, http.StatusBadRequest, "hash must be 64 lower-case hex digits (SHA-256), got "+fmt.Sprintf("%q", want))
		return
	}
	e.mu.Lock()
	rec := e.records[uid]
	if rec == nil {
		e.mu.Unlock()
		admin.WriteError(w, http.StatusNotFound, "no configured agent "+uid.String())
		return
	}
	h := want
	if h == "" {
		h = rec.desired
	} else if !rec.owns(h) {
		e.mu.Unlock()
		admin.WriteError(w, http.StatusNotFound, "configuration "+h+" is not one of agent "+uid.String()+
			"'s (assigned, desired, sent, applied or failed)")
		return
	}
	body, ok := e.bodies[h]
	e.mu.Unlock()
	switch {
	case h == "":
		admin.WriteError(w, http.StatusNotFound, "agent "+uid.String()+" has no desired configuration")
		return
	case !ok:
		admin.WriteError(w, http.StatusNotFound, "no stored configuration "+h)
		return
	}
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("X-Config-Hash", h)
	_, _ = w.Write(body)
}

// getContext answers the agent's render input: the context document
// telecraft render --context reads.
func (e *Engine) getContext(w http.ResponseWriter, r *http.Request) {
	uid, err := uuid.Parse(r.PathValue("uid"))
	if err != nil {
		admin.WriteError(w, http.StatusBadRequest, "not an instance UID: "+r.PathValue("uid"))
		return
	}
	e.mu.Lock()
	rec := e.records[uid]
	var doc *configrender.Document
	if rec != nil && rec.view.Known() {
		in, source := e.inputOf(rec)
		doc = &configrender.Document{Context: in.Context, Types: in.Types, Dynamic: in.Dynamic, Source: source}
		if doc.Dynamic == nil {
			doc.Dynamic = map[string][]configrender.Mapping{}
		}
	}
	e.mu.Unlock()
	if doc == nil {
		admin.WriteError(w, http.StatusNotFound, "no collector or Bridge "+uid.String())
		return
	}
	admin.WriteJSON(w, http.StatusOK, doc)
}

// Retry clears an agent's failed hashes so its assigned configuration is
// offered again.
func (e *Engine) Retry(uid uuid.UUID) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.records[uid]
	if r == nil || !r.view.Known() {
		return fmt.Errorf("no configured agent %s", uid)
	}
	r.own().failed, r.own().failedWhy = nil, ""
	if r.reported.Status == StatusFailed {
		// The failure is the agent's last word about that hash; it no
		// longer blocks an offer.
		r.sendAgain()
	}
	e.event(r, "config_retry", "failed configurations cleared by an operator")
	e.dirty[uid] = struct{}{}
	e.evaluate(map[uuid.UUID]struct{}{uid: {}})
	e.kick()
	return nil
}

// Desired returns an agent's desired configuration: its hash and body.
func (e *Engine) Desired(uid uuid.UUID) (string, []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.records[uid]
	if r == nil || r.desired == "" {
		return "", nil
	}
	return r.desired, e.bodies[r.desired]
}
