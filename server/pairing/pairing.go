// Package pairing decides which updater looks after which collector (seed
// 003, the updater paragraph). It keeps an index from claimed collector UID
// to claiming updaters, so every change re-evaluates only the collectors it
// touches: never a scan of all pairs.
package pairing

import (
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/intern"
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
	// agents holds each agent's facts and pairing in one record: the index
	// holds every agent of the estate, so a pairing is not a map entry of
	// its own.
	agents map[uuid.UUID]*entry
	// claims are the updaters claiming each collector.
	claims claims
	// ambiguous holds the claimants of the collectors in that state (few).
	ambiguous map[uuid.UUID][]uuid.UUID
	// creds shares the entries' credentials: an updater and its collector
	// present the same one, and so do a token's other agents.
	creds intern.Values[store.Credential]
}

// New returns an empty index.
func New() *Index {
	return &Index{
		agents:    map[uuid.UUID]*entry{},
		claims:    newClaims(),
		ambiguous: map[uuid.UUID][]uuid.UUID{},
	}
}

// Update records an agent's new facts and re-evaluates the collectors they
// affect, returning those whose state changed.
func (ix *Index) Update(a Agent) []Change {
	affected := map[uuid.UUID]struct{}{}
	ix.place(a, affected)
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
	ix.agents = make(map[uuid.UUID]*entry, len(agents))
	all := make([]entry, len(agents)) // one allocation for the whole estate
	for i := range agents {
		if _, ok := ix.agents[agents[i].UID]; ok {
			ix.place(agents[i], affected) // the same UID twice: the later facts win, as with Update
			continue
		}
		all[i].set(agents[i], &ix.creds)
		ix.agents[agents[i].UID] = &all[i]
		ix.placeNew(&all[i], affected)
	}
	for c := range affected {
		ix.evalInto(c) // no changes to report, so no order to keep
	}
}

// place records a's facts, replacing earlier ones, and adds the collectors
// whose pairing they may change to affected.
func (ix *Index) place(a Agent, affected map[uuid.UUID]struct{}) {
	e, ok := ix.agents[a.UID]
	if !ok {
		e = &entry{}
		e.set(a, &ix.creds)
		ix.agents[a.UID] = e
		ix.placeNew(e, affected)
		return
	}
	if e.role == Updater && e.hasClaim {
		affected[e.claim] = struct{}{}
		ix.claims.remove(e.claim, e.uid)
	}
	if e.role == Collector {
		affected[e.uid] = struct{}{}
	}
	if e.role != a.Role {
		// A collector's pairing and an updater's are not the same thing:
		// what it had under its former role is gone (the evaluation of a
		// collector then sees none to compare with).
		e.state, e.reason, e.peer = none, 0, uuid.Nil
		delete(ix.ambiguous, e.uid)
	}
	e.set(a, &ix.creds)
	ix.placeNew(e, affected)
}

// placeNew claims what e's facts claim and sets what its role decides
// without an evaluation.
func (ix *Index) placeNew(e *entry, affected map[uuid.UUID]struct{}) {
	switch e.role {
	case Updater:
		if e.hasClaim {
			ix.claims.add(e.claim, e.uid)
			e.setUpdater(none, 0, uuid.Nil) // the claimed collector's evaluation sets it
			affected[e.claim] = struct{}{}
		} else {
			e.setUpdater(unlinked, reasonNoClaim, uuid.Nil)
		}
	case Collector:
		affected[e.uid] = struct{}{}
	default:
		e.state, e.reason, e.peer = none, 0, uuid.Nil
		affected[e.uid] = struct{}{} // updaters may claim a UID that stopped being a collector
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
		old, had := ix.Collector(c)
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
	e := ix.agents[c]
	if e == nil {
		return nw, false
	}
	if !isCollector {
		if e.role != Updater {
			e.state, e.peer = none, uuid.Nil
		}
		delete(ix.ambiguous, c)
		return nw, false
	}
	e.state, e.peer = stateOf(nw.State), nw.Updater
	if e.state == ambiguous {
		ix.ambiguous[c] = nw.Claimants
	} else {
		delete(ix.ambiguous, c)
	}
	return nw, true
}

// evalCollector applies the rules to one collector and its claimants.
func (ix *Index) evalCollector(c uuid.UUID) (CollectorState, bool) {
	col := ix.agents[c]
	isCollector := col != nil && col.role == Collector
	var valid, online []*entry
	var buf [2]uuid.UUID
	for _, u := range ix.claims.appendTo(buf[:0], c) {
		upd := ix.agents[u]
		if !isCollector {
			upd.setUpdater(unlinked, reasonUnknownCollector, uuid.Nil)
			continue
		}
		if reason := rules(upd, col); reason != 0 {
			upd.setUpdater(unlinked, reason, uuid.Nil)
			continue
		}
		valid = append(valid, upd)
		if upd.online {
			online = append(online, upd)
		}
	}
	if !isCollector {
		return CollectorState{}, false
	}
	byUID := func(s []*entry) {
		sort.Slice(s, func(i, j int) bool { return string(s[i].uid[:]) < string(s[j].uid[:]) })
	}
	byUID(valid)
	byUID(online)
	var st CollectorState
	var chosen *entry
	switch {
	case len(online) > 1:
		st.State = Ambiguous
		for _, u := range online {
			st.Claimants = append(st.Claimants, u.uid)
		}
	case len(online) == 1:
		chosen = online[0]
	case len(valid) > 0:
		// Nobody online: keep the most recently seen claimant linked, so the
		// offer waits for it rather than showing no_updater.
		chosen = valid[0]
		for _, u := range valid[1:] {
			if u.lastSeen > chosen.lastSeen {
				chosen = u
			}
		}
	default:
		st.State = NoUpdater
	}
	if chosen != nil {
		st.State, st.Updater, st.Claimants = Linked, chosen.uid, []uuid.UUID{chosen.uid}
	}
	for _, u := range valid {
		switch {
		case st.State == Ambiguous && u.online:
			u.setUpdater(ambiguous, 0, c)
		case chosen != nil && u.uid == chosen.uid:
			u.setUpdater(linked, 0, c)
		default:
			u.setUpdater(unlinked, reasonSuperseded, uuid.Nil)
		}
	}
	return st, true
}

// rules returns which pairing rule an updater fails for a collector (0: none).
func rules(u, c *entry) reason {
	if *u.cred != *c.cred {
		return reasonCredential
	}
	if u.host != 0 && c.host != 0 && u.host != c.host {
		return reasonHostName
	}
	return 0
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
	e := ix.agents[uid]
	if e == nil || e.role != Collector || e.state == none {
		return CollectorState{}, false
	}
	s := CollectorState{State: stateNames[e.state]}
	switch e.state {
	case linked:
		s.Updater, s.Claimants = e.peer, []uuid.UUID{e.peer}
	case ambiguous:
		s.Claimants = ix.ambiguous[uid]
	}
	return s, true
}

// Updater returns an updater's state.
func (ix *Index) Updater(uid uuid.UUID) (UpdaterState, bool) {
	e := ix.agents[uid]
	if e == nil || e.role != Updater || e.state == none {
		return UpdaterState{}, false
	}
	return UpdaterState{State: stateNames[e.state], Collector: e.peer, Reason: reasonNames[e.reason]}, true
}

// Collectors returns every collector UID with a state.
func (ix *Index) Collectors() []uuid.UUID { return ix.withState(Collector) }

// Updaters returns every updater UID with a state.
func (ix *Index) Updaters() []uuid.UUID { return ix.withState(Updater) }

func (ix *Index) withState(r Role) []uuid.UUID {
	var out []uuid.UUID
	for uid, e := range ix.agents {
		if e.role == r && e.state != none {
			out = append(out, uid)
		}
	}
	return out
}
