// Package pairing decides which updater looks after which collector (seed
// 003, the updater paragraph). It keeps an index from claimed collector UID
// to claiming updaters, so every change re-evaluates only the collectors it
// touches: never a scan of all pairs.
package pairing

import (
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/store"
)

// Role is how pairing sees an agent.
type Role uint8

const (
	Other Role = iota
	Collector
	Updater
)

// Agent is what pairing needs to know about one agent.
type Agent struct {
	UID      uuid.UUID
	Cred     store.Credential
	Host     string // host.name from the attribute view; "" when not reported
	LastSeen time.Time
	// Claim is the collector an updater claims (dev.myriarch.collector.instance_uid).
	Claim    uuid.UUID
	Role     Role
	Online   bool
	HasClaim bool
}

// Collector states.
const (
	Linked    = "linked"
	Ambiguous = "ambiguous"
	NoUpdater = "no_updater"
	Unlinked  = "unlinked"
)

// Updater reasons (which rule failed).
const (
	ReasonCredential       = "credential"
	ReasonHostName         = "host name"
	ReasonUnknownCollector = "unknown collector"
	ReasonNoClaim          = "no collector instance UID reported"
	ReasonSuperseded       = "another updater is linked"
)

// CollectorState is a collector's pairing.
type CollectorState struct {
	State     string
	Updater   uuid.UUID // zero unless linked
	Claimants []uuid.UUID
}

// UpdaterState is an updater's pairing.
type UpdaterState struct {
	State     string
	Collector uuid.UUID // zero unless linked or ambiguous
	Reason    string
}

// Change is a collector whose pairing changed.
type Change struct {
	Collector uuid.UUID
	Old, New  CollectorState
}

// Index holds agents and their pairings. It is not safe for concurrent use:
// the caller serialises.
type Index struct {
	agents map[uuid.UUID]*Agent
	// claims are the updaters claiming each collector, in no order (one,
	// almost always: a slice costs a fraction of a set).
	claims     map[uuid.UUID][]uuid.UUID
	collectors map[uuid.UUID]CollectorState
	updaters   map[uuid.UUID]UpdaterState
}

// New returns an empty index.
func New() *Index {
	return &Index{
		agents:     map[uuid.UUID]*Agent{},
		claims:     map[uuid.UUID][]uuid.UUID{},
		collectors: map[uuid.UUID]CollectorState{},
		updaters:   map[uuid.UUID]UpdaterState{},
	}
}

// Update records an agent's new facts and re-evaluates the collectors they
// affect, returning those whose state changed.
func (ix *Index) Update(a Agent) []Change {
	affected := map[uuid.UUID]struct{}{}
	cp := a
	ix.place(&cp, affected)
	return ix.evaluate(affected)
}

// Load records many agents into an empty index and evaluates every
// collector once, reaching the state that Update for each in turn would
// (pairing depends only on the agents' current facts). It reports no
// changes: it rebuilds an index (e.g. after a restart) rather than changing
// one, and costs one evaluation per collector instead of one per agent.
func (ix *Index) Load(agents []Agent) {
	if len(ix.agents) > 0 {
		// Not a fresh index: the per-agent path keeps claims consistent.
		for _, a := range agents {
			ix.Update(a)
		}
		return
	}
	affected := make(map[uuid.UUID]struct{}, len(agents))
	ix.agents = make(map[uuid.UUID]*Agent, len(agents))
	ix.collectors = make(map[uuid.UUID]CollectorState, len(agents)/2)
	ix.updaters = make(map[uuid.UUID]UpdaterState, len(agents)/2)
	all := make([]Agent, len(agents))
	copy(all, agents)
	for i := range all {
		ix.place(&all[i], affected) // the same UID twice: the later facts win, as with Update
	}
	for c := range affected {
		ix.evalInto(c) // no changes to report, so no order to keep
	}
}

// place records a's facts, replacing earlier ones, and adds the collectors
// whose pairing they may change to affected.
func (ix *Index) place(a *Agent, affected map[uuid.UUID]struct{}) {
	if old, ok := ix.agents[a.UID]; ok {
		if old.Role == Updater && old.HasClaim {
			affected[old.Claim] = struct{}{}
			ix.unclaim(old.Claim, a.UID)
		}
		if old.Role == Collector {
			affected[a.UID] = struct{}{}
		}
	}
	ix.agents[a.UID] = a
	switch a.Role {
	case Updater:
		delete(ix.collectors, a.UID)
		if a.HasClaim {
			if set := ix.claims[a.Claim]; !slices.Contains(set, a.UID) {
				ix.claims[a.Claim] = append(set, a.UID)
			}
			delete(ix.updaters, a.UID) // the claimed collector's evaluation sets it
			affected[a.Claim] = struct{}{}
		} else {
			ix.updaters[a.UID] = UpdaterState{State: Unlinked, Reason: ReasonNoClaim}
		}
	case Collector:
		delete(ix.updaters, a.UID)
		affected[a.UID] = struct{}{}
	default:
		delete(ix.updaters, a.UID)
		delete(ix.collectors, a.UID)
		affected[a.UID] = struct{}{} // updaters may claim a UID that stopped being a collector
	}
}

func (ix *Index) unclaim(collector, updater uuid.UUID) {
	set := ix.claims[collector]
	i := slices.Index(set, updater)
	switch {
	case i < 0:
	case len(set) == 1:
		delete(ix.claims, collector)
	default:
		ix.claims[collector] = slices.Delete(set, i, i+1)
	}
}

func (ix *Index) evaluate(affected map[uuid.UUID]struct{}) []Change {
	var changes []Change
	keys := make([]uuid.UUID, 0, len(affected))
	for k := range affected {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return string(keys[i][:]) < string(keys[j][:]) })
	for _, c := range keys {
		old, had := ix.collectors[c]
		nw, isCollector := ix.evalInto(c)
		if isCollector && (!had || !sameState(old, nw)) {
			changes = append(changes, Change{Collector: c, Old: old, New: nw})
		}
	}
	return changes
}

// evalInto evaluates one collector and records its state (none when it is
// not a collector).
func (ix *Index) evalInto(c uuid.UUID) (CollectorState, bool) {
	nw, isCollector := ix.evalCollector(c)
	if !isCollector {
		delete(ix.collectors, c)
		return nw, false
	}
	ix.collectors[c] = nw
	return nw, true
}

// evalCollector applies the rules to one collector and its claimants.
func (ix *Index) evalCollector(c uuid.UUID) (CollectorState, bool) {
	col, ok := ix.agents[c]
	isCollector := ok && col.Role == Collector
	var valid, online []*Agent
	for _, u := range ix.claims[c] {
		upd := ix.agents[u]
		if !isCollector {
			ix.updaters[u] = UpdaterState{State: Unlinked, Reason: ReasonUnknownCollector}
			continue
		}
		if reason := rules(upd, col); reason != "" {
			ix.updaters[u] = UpdaterState{State: Unlinked, Reason: reason}
			continue
		}
		valid = append(valid, upd)
		if upd.Online {
			online = append(online, upd)
		}
	}
	if !isCollector {
		return CollectorState{}, false
	}
	byUID := func(s []*Agent) {
		sort.Slice(s, func(i, j int) bool { return string(s[i].UID[:]) < string(s[j].UID[:]) })
	}
	byUID(valid)
	byUID(online)
	var st CollectorState
	var chosen *Agent
	switch {
	case len(online) > 1:
		st.State = Ambiguous
		for _, u := range online {
			st.Claimants = append(st.Claimants, u.UID)
		}
	case len(online) == 1:
		chosen = online[0]
	case len(valid) > 0:
		// Nobody online: keep the most recently seen claimant linked, so the
		// offer waits for it rather than showing no_updater.
		chosen = valid[0]
		for _, u := range valid[1:] {
			if u.LastSeen.After(chosen.LastSeen) {
				chosen = u
			}
		}
	default:
		st.State = NoUpdater
	}
	if chosen != nil {
		st.State, st.Updater, st.Claimants = Linked, chosen.UID, []uuid.UUID{chosen.UID}
	}
	for _, u := range valid {
		switch {
		case st.State == Ambiguous && u.Online:
			ix.updaters[u.UID] = UpdaterState{State: Ambiguous, Collector: c}
		case chosen != nil && u.UID == chosen.UID:
			ix.updaters[u.UID] = UpdaterState{State: Linked, Collector: c}
		default:
			ix.updaters[u.UID] = UpdaterState{State: Unlinked, Reason: ReasonSuperseded}
		}
	}
	return st, true
}

// rules returns which pairing rule an updater fails for a collector, or "".
func rules(u, c *Agent) string {
	if u.Cred != c.Cred {
		return ReasonCredential
	}
	if u.Host != "" && c.Host != "" && u.Host != c.Host {
		return ReasonHostName
	}
	return ""
}

func sameState(a, b CollectorState) bool {
	if a.State != b.State || a.Updater != b.Updater || len(a.Claimants) != len(b.Claimants) {
		return false
	}
	for i := range a.Claimants {
		if a.Claimants[i] != b.Claimants[i] {
			return false
		}
	}
	return true
}

// Collector returns a collector's state.
func (ix *Index) Collector(uid uuid.UUID) (CollectorState, bool) {
	s, ok := ix.collectors[uid]
	return s, ok
}

// Updater returns an updater's state.
func (ix *Index) Updater(uid uuid.UUID) (UpdaterState, bool) {
	s, ok := ix.updaters[uid]
	return s, ok
}

// Collectors returns every collector UID with a state.
func (ix *Index) Collectors() []uuid.UUID {
	out := make([]uuid.UUID, 0, len(ix.collectors))
	for k := range ix.collectors {
		out = append(out, k)
	}
	return out
}

// Updaters returns every updater UID with a state.
func (ix *Index) Updaters() []uuid.UUID {
	out := make([]uuid.UUID, 0, len(ix.updaters))
	for k := range ix.updaters {
		out = append(out, k)
	}
	return out
}
