package offers

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/pairing"
	"github.com/myriarch/myriarch/server/registry"
)

// Operator actions the leading instance performs, with their arguments
// (see Options.Requests).
const (
	OpRetry      = "offers.retry"      // collector UID
	OpRetryFleet = "offers.retryFleet" // fleet name; result: how many
	OpPause      = "fleets.pause"      // fleet name: every rollout of it
	OpResume     = "fleets.resume"     // fleet name: every rollout of it
)

// States are the offer states, the values of GET /api/v1/agents?offerState=.
var States = []string{UpToDate, WaitingWave, Offered, Downloading, Installing, Installed, Failed,
	HeldAmbiguous, NoUpdater, NoArtifact, Paused}

// Pause stops a fleet's rollout by an operator's decision: no new offer is
// made until Resume; offers in flight continue.
func (e *Engine) Pause(name string) error {
	e.mu.Lock()
	f, ok := e.fleets[name]
	if !ok || f.def.Package == "" {
		e.mu.Unlock()
		return fmt.Errorf("no fleet %q", name)
	}
	if f.Pause() {
		f.dirty = true
		e.log.Info("rollout paused by an operator", "fleet", name)
		e.opts.Notice.Say(estate.EventRolloutPaused, name, "package rollout paused by an operator")
		e.evaluateLocked(f.waves.MemberSet())
	}
	dirty := e.dirtyFleetsLocked()
	e.mu.Unlock()
	e.saveFleets(dirty)
	return nil
}

// RetryFleet clears the failed offers of every member of a fleet, as Retry
// does for one collector; it returns how many collectors it retried.
func (e *Engine) RetryFleet(name string) (int, error) {
	e.mu.Lock()
	f, ok := e.fleets[name]
	if !ok || f.def.Package == "" {
		e.mu.Unlock()
		if ok {
			return 0, fmt.Errorf("no fleet %q with a package: its configuration is retried with POST /api/v1/fleets/%s/config/retry", name, name)
		}
		return 0, fmt.Errorf("no fleet %q", name)
	}
	work := map[uuid.UUID]struct{}{}
	for m := range f.waves.Members() {
		if c := e.collectors[m]; c != nil && c.state == Failed {
			c.clearFailed()
			e.reg.AddEvent(m, "offer_retry", "failed offers of fleet "+name+" cleared by an operator")
			e.persistLocked(c)
			work[m] = struct{}{}
		}
	}
	e.evaluateLocked(work)
	e.mu.Unlock()
	return len(work), nil
}

// everyRollout is a route acting on every rollout of a fleet: the package
// rollout (own) and the extensions' (ext); it answers the fleet, or 404 when
// no rollout of that name exists.
// With instances sharing a store, the leading one acts (op).
func (e *Engine) everyRollout(op string, own func(name string) error, ext func(x FleetExtension, name string) bool) http.HandlerFunc {
	e.actions.Add(op, func(_ context.Context, args []string) (string, error) {
		name := args[0]
		err := own(name)
		done := err == nil
		for _, x := range e.fleetExtensions() {
			done = ext(x, name) || done
		}
		if !done {
			return "", err
		}
		return "", nil
	})
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if _, err := e.actions.Do(r.Context(), op, name); err != nil {
			admin.WriteActionError(w, http.StatusNotFound, err)
			return
		}
		e.writeFleet(w, name)
	}
}

// operatorRoutes adds what the console needs beyond the CLI's routes: pause,
// fleet-wide retry, listing filters by fleet and offer state, and the
// offers' and pairings' parts of the summary.
func (e *Engine) operatorRoutes(api *admin.API) {
	api.Handle("POST /api/v1/fleets/{name}/pause", e.everyRollout(OpPause, e.Pause, func(x FleetExtension, name string) bool {
		p, ok := x.(FleetPauser)
		return ok && p.PauseFleet(name)
	}))
	api.FleetRetry(e.actions, "/api/v1/fleets/{name}/retry", OpRetryFleet, e.RetryFleet)
	api.AddFilter("fleet", func(v string) (func(*registry.Agent) bool, error) {
		return func(a *registry.Agent) bool {
			e.mu.Lock()
			defer e.mu.Unlock()
			c := e.collectors[a.UID]
			return c != nil && c.fleet == v
		}, nil
	})
	api.AddFilter("offerState", func(v string) (func(*registry.Agent) bool, error) {
		if !slices.Contains(States, v) {
			return nil, fmt.Errorf("offerState must be one of %s, got %q", strings.Join(States, ", "), v)
		}
		return func(a *registry.Agent) bool {
			e.mu.Lock()
			defer e.mu.Unlock()
			c := e.collectors[a.UID]
			return c != nil && c.state == v
		}, nil
	})
	api.AddSummary("offers", func() any { return e.StateCounts() })
	api.AddSummary("pairings", e.pairingCounts)
}

// pairingCounts counts collectors by pairing state and unlinked updaters.
func (e *Engine) pairingCounts() any {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{pairing.Linked: 0, pairing.Ambiguous: 0, pairing.NoUpdater: 0, "unlinkedUpdaters": 0}
	for _, uid := range e.ix.Collectors() {
		s, _ := e.ix.Collector(uid)
		out[s.State]++
	}
	for _, uid := range e.ix.Updaters() {
		if s, _ := e.ix.Updater(uid); s.State != pairing.Linked {
			out["unlinkedUpdaters"]++
		}
	}
	return out
}
