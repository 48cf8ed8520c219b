package offers

import (
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/pairing"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/rollout"
)

// CollectorPairing is the "pairing" JSON of a collector.
type CollectorPairing struct {
	State     string   `json:"state"`
	Updater   *string  `json:"updater"`
	Claimants []string `json:"claimants"`
}

// UpdaterPairing is the "pairing" JSON of an updater.
type UpdaterPairing struct {
	State     string  `json:"state"`
	Collector *string `json:"collector"`
	Reason    string  `json:"reason"`
}

// Assignment is a collector's fleet assignment.
type Assignment = rollout.Assignment

// Offer is a collector's offer state.
type Offer struct {
	Package   string    `json:"package"`
	Version   string    `json:"version"`
	State     string    `json:"state"`
	Error     *string   `json:"error"`
	UpdatedAt time.Time `json:"updatedAt"`
	Progress  *Progress `json:"progress,omitempty"`
}

// WriteFields implements admin.FieldWriter (listings render thousands).
func (p CollectorPairing) WriteFields(o *admin.Object) {
	o.String("state", p.State)
	o.StringPtr("updater", p.Updater)
	o.Strings("claimants", p.Claimants)
}

// WriteFields implements admin.FieldWriter.
func (p UpdaterPairing) WriteFields(o *admin.Object) {
	o.String("state", p.State)
	o.StringPtr("collector", p.Collector)
	o.String("reason", p.Reason)
}

// WriteFields implements admin.FieldWriter.
func (f Offer) WriteFields(o *admin.Object) {
	o.String("package", f.Package)
	o.String("version", f.Version)
	o.String("state", f.State)
	o.StringPtr("error", f.Error)
	o.Time("updatedAt", f.UpdatedAt)
	if f.Progress != nil {
		o.Any("progress", f.Progress)
	}
}

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (e *Engine) collectorPairingLocked(uid uuid.UUID) CollectorPairing {
	s, ok := e.ix.Collector(uid)
	p := CollectorPairing{State: pairing.NoUpdater, Claimants: []string{}}
	if !ok {
		return p
	}
	p.State = s.State
	if s.State == pairing.Linked {
		p.Updater = strp(s.Updater.String())
	}
	for _, c := range s.Claimants {
		p.Claimants = append(p.Claimants, c.String())
	}
	return p
}

func (e *Engine) updaterPairingLocked(uid uuid.UUID) UpdaterPairing {
	s, ok := e.ix.Updater(uid)
	if !ok {
		return UpdaterPairing{State: pairing.Unlinked, Reason: pairing.ReasonNoClaim}
	}
	p := UpdaterPairing{State: s.State, Reason: s.Reason}
	if s.Collector != uuid.Nil {
		p.Collector = strp(s.Collector.String())
	}
	return p
}

// decorateLocked adds pairing, assignment and offer; caller holds e.mu.
func (e *Engine) decorateLocked(a *registry.Agent, j *admin.Agent) {
	switch a.Kind {
	case registry.KindUpdater:
		j.Pairing = e.updaterPairingLocked(a.UID)
	case registry.KindCollector:
		j.Pairing = e.collectorPairingLocked(a.UID)
		c := e.collectors[a.UID]
		if c == nil {
			j.Assignment = Assignment{}
			return
		}
		j.Assignment = Assignment{Fleet: strp(c.fleet), TargetVersion: strp(c.target), Error: strp(c.assign)}
		if c.state != "" {
			pkg := c.pkg
			if f := e.fleets[c.fleet]; f != nil {
				pkg = f.def.Package
			}
			j.Offer = Offer{Package: pkg, Version: c.target, State: c.state, Error: strp(c.err), UpdatedAt: c.updated.Time(), Progress: c.progress}
		}
	}
}

// Routes adds the pairing, fleet and retry routes to the admin API.
func (e *Engine) Routes(api *admin.API) {
	api.AddDecorator(admin.LockedDecorator{Mu: &e.mu, Locked: e.decorateLocked})
	e.operatorRoutes(api)
	api.Handle("GET /api/v1/pairings", e.listPairings)
	api.Handle("GET /api/v1/fleets", e.listFleets)
	api.Handle("POST /api/v1/fleets/{name}/resume", e.everyRollout(OpResume, e.Resume, FleetExtension.ResumeFleet))
	api.AgentAction(e.actions, "/api/v1/agents/{uid}/retry", OpRetry, "collector", e.Retry)
}

func (e *Engine) listPairings(w http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state") // "" is every state
	switch state {
	case "", pairing.Linked, pairing.Ambiguous, pairing.NoUpdater, pairing.Unlinked:
	default:
		admin.WriteError(w, http.StatusBadRequest, "state must be one of linked, ambiguous, no_updater, unlinked, got "+strconv.Quote(state))
		return
	}
	type colJSON struct {
		InstanceUID string `json:"instanceUid"`
		CollectorPairing
	}
	type updJSON struct {
		InstanceUID string `json:"instanceUid"`
		UpdaterPairing
	}
	e.mu.Lock()
	cols := []colJSON{}
	for _, uid := range e.ix.Collectors() {
		if p := e.collectorPairingLocked(uid); state == "" || p.State == state {
			cols = append(cols, colJSON{uid.String(), p})
		}
	}
	upds := []updJSON{}
	for _, uid := range e.ix.Updaters() {
		if p := e.updaterPairingLocked(uid); state == "" || p.State == state {
			upds = append(upds, updJSON{uid.String(), p})
		}
	}
	e.mu.Unlock()
	sort.Slice(cols, func(i, j int) bool { return cols[i].InstanceUID < cols[j].InstanceUID })
	sort.Slice(upds, func(i, j int) bool { return upds[i].InstanceUID < upds[j].InstanceUID })
	admin.WriteJSON(w, http.StatusOK, map[string]any{"collectors": cols, "updaters": upds})
}

// FleetJSON is one fleet with its rollout progress.
type FleetJSON struct {
	Name          string            `json:"name"`
	Priority      int               `json:"priority"`
	Selector      map[string]string `json:"selector"`
	Package       string            `json:"package"`
	TargetVersion string            `json:"targetVersion"`
	// Rollout is the package rollout ("none" for a fleet without a package).
	Rollout RolloutJSON `json:"rollout"`
	// Config is the configuration rollout, from a FleetExtension; null
	// for a fleet without a configuration.
	Config any `json:"config"`
}

// FleetExtension adds a feature's rollout (the configuration's) to the
// fleets API. Its methods are called without the engine's lock held.
type FleetExtension interface {
	// FleetJSON is the feature's part of the fleet, nil for none.
	FleetJSON(name string) any
	// ResumeFleet resumes the feature's rollout of the fleet; false when
	// it has none.
	ResumeFleet(name string) bool
}

// FleetPauser is a FleetExtension that an operator can pause too (found by
// type assertion): POST /api/v1/fleets/{name}/pause pauses every rollout of
// the fleet, as resume resumes them all.
type FleetPauser interface {
	// PauseFleet pauses the feature's rollout of the fleet; false when it
	// has none.
	PauseFleet(name string) bool
}

// AddFleetExtension adds x to the fleets API. Call before serving.
func (e *Engine) AddFleetExtension(x FleetExtension) {
	e.mu.Lock()
	e.extensions = append(e.extensions, x)
	e.mu.Unlock()
}

func (e *Engine) fleetExtensions() []FleetExtension {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.extensions
}

// extend fills in the extensions' parts of fleets.
func (e *Engine) extend(fleets []FleetJSON) {
	for _, x := range e.fleetExtensions() {
		for i := range fleets {
			if v := x.FleetJSON(fleets[i].Name); v != nil {
				fleets[i].Config = v
			}
		}
	}
}

// RolloutJSON is a fleet's package rollout: its state ("none" for a fleet
// without a package) and its waves.
type RolloutJSON struct {
	rollout.Summary
	Waves []WaveJSON `json:"waves"`
}

// WaveJSON counts a wave's agents by offer state.
type WaveJSON struct {
	Wave     string         `json:"wave"`
	Total    int            `json:"total"`
	Open     bool           `json:"open"`
	UpToDate int            `json:"upToDate"`
	Failed   int            `json:"failed"`
	States   map[string]int `json:"states"`
}

func (e *Engine) fleetJSONLocked(f *fleet) FleetJSON {
	out := FleetJSON{Name: f.def.Name, Priority: f.def.Priority, Selector: f.def.Selector, Package: f.def.Package,
		TargetVersion: f.def.TargetVersion, Rollout: RolloutJSON{Waves: []WaveJSON{}}}
	if out.Selector == nil {
		out.Selector = map[string]string{}
	}
	if f.def.Package == "" {
		out.Rollout.Summary = rollout.Summarize(f.def, rollout.State{Failures: f.Failures}, false)
		out.Rollout.State = "none"
		return out
	}
	complete := true
	for _, row := range rollout.Rows(f.def, f.waves) {
		wj := WaveJSON{Wave: row.Wave, Total: row.Total, Open: row.Open, UpToDate: row.States[UpToDate], Failed: row.States[Failed], States: row.States}
		if wj.UpToDate+wj.Failed != wj.Total {
			complete = false
		}
		out.Rollout.Waves = append(out.Rollout.Waves, wj)
	}
	out.Rollout.Summary = rollout.Summarize(f.def, f.State, complete)
	return out
}

func (e *Engine) listFleets(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	out := []FleetJSON{}
	for _, f := range e.fleets {
		if f.def.Package != "" || f.def.Config != nil {
			out = append(out, e.fleetJSONLocked(f))
		}
	}
	e.mu.Unlock()
	e.extend(out)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	admin.WriteJSON(w, http.StatusOK, map[string]any{"fleets": out})
}

func (e *Engine) writeFleet(w http.ResponseWriter, name string) {
	e.mu.Lock()
	f := e.fleets[name]
	var out FleetJSON
	if f != nil {
		out = e.fleetJSONLocked(f)
	}
	e.mu.Unlock()
	list := []FleetJSON{out}
	e.extend(list)
	admin.WriteJSON(w, http.StatusOK, list[0])
}
