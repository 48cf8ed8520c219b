package registry

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/internal/intern"
	"github.com/myriarch/myriarch/internal/stamp"
	"github.com/myriarch/myriarch/server/store"
)

// Options tunes a Registry; zero values take the defaults.
type Options struct {
	// FlushInterval is how often changed agents and new events are written.
	FlushInterval time.Duration
	// SeenInterval is how often heartbeat-only lastSeen changes are written.
	SeenInterval time.Duration
	// ConnectedSeenInterval, when longer, is how often those of an agent
	// with a WebSocket open here are (instances sharing a store count such
	// an agent online by its instance, not by its last-seen time); its
	// last-seen time is written when its connection closes anyway.
	ConnectedSeenInterval time.Duration
	// HTTPOnlineWindow: a plain-HTTP agent counts as online this long after a poll.
	HTTPOnlineWindow time.Duration
	// NewAgentsPerMinute bounds the new instance UIDs one credential may
	// register per minute (a burst of as many); 0 is no bound.
	NewAgentsPerMinute int
	// PruneAfter forgets agents offline for longer (see prune.go); 0 never.
	PruneAfter time.Duration
	// PruneInterval is how often offline agents are looked for; default 1 h.
	PruneInterval time.Duration
	// Now is the clock (tests).
	Now func() time.Time
	// Instance, when set, names this instance among those sharing the
	// store: rows then say which instance an agent's WebSocket is open to
	// and when it opened (written when each opens and the last closes),
	// the others count it online while that instance lives, and an agent
	// connected to two instances at once keeps its newer connection only
	// (see elsewhere.go).
	Instance string
}

func (o *Options) defaults() {
	if o.FlushInterval <= 0 {
		o.FlushInterval = 500 * time.Millisecond
	}
	if o.SeenInterval <= 0 {
		o.SeenInterval = 30 * time.Second
	}
	if o.HTTPOnlineWindow <= 0 {
		o.HTTPOnlineWindow = 90 * time.Second
	}
	if o.PruneInterval <= 0 {
		o.PruneInterval = time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Observer is told, outside the registry's lock, that an agent changed in a
// way that may matter to it (connect, disconnect, description, labels, kind).
type Observer func(uid uuid.UUID)

// Registry holds every agent. All methods are safe for concurrent use.
type Registry struct {
	opts  Options
	log   *slog.Logger
	store store.Agents
	// history reads histories kept in the store only (nil: every history
	// is in memory).
	history store.History
	// onEvent sees the events AddEvent records (see OnEvent).
	onEvent atomic.Pointer[func(uid uuid.UUID, typ, msg string, at time.Time)]

	// mu guards the fields marked so and every agent record; helpers that
	// need it held end in Locked. Load fills them before the registry is
	// shared, without it.
	mu            sync.RWMutex
	agents        map[uuid.UUID]*agent        // guarded by mu
	inventory     Inventory                   // guarded by mu
	tokens        TokenInfo                   // set once by Load
	pendingRows   map[uuid.UUID]stamp.Stamp   // when each row last changed; guarded by mu
	pendingSeen   map[uuid.UUID]struct{}      // guarded by mu
	pendingEvents map[uuid.UUID][]store.Event // guarded by mu
	// pendingReports are reports to write (see SetReport); pendingConns
	// WebSockets opened (true) or all closed (false) to write (see
	// Options.Instance); live when each instance sharing the store stops
	// counting as alive; all guarded by mu.
	pendingReports map[reportKey]store.Report
	pendingConns   map[uuid.UUID]bool
	live           map[string]time.Time
	// pendingDeletes are pruned agents still to remove from the store.
	pendingDeletes []uuid.UUID               // guarded by mu
	messages       intern.Table              // guarded by mu; event messages repeat across the fleet
	observers      []Observer                // guarded by mu
	watchers       []Observer                // guarded by mu; see Watch
	replacedHooks  []func(ReplacedElsewhere) // guarded by mu; see OnReplacedElsewhere
	// order holds the UIDs sorted, unsorted those registered since (see page.go).
	order    []uuid.UUID // guarded by mu
	unsorted []uuid.UUID // guarded by mu

	flushMu sync.Mutex // serialises writes to the store
	stop    chan struct{}
	done    chan struct{}

	registrations *registrationLimit             // nil without a bound
	conflicts     conflicts                      // identity conflicts recorded, see conflicts.go
	labelSets     labelSets                      // equal label maps shared among agents
	keySets       keySets                        // equal identifying key lists shared among agents
	creds         sharedValues[store.Credential] // equal credentials shared among agents
	instances     sharedValues[string]           // instance names shared among agents
}

// TokenInfo answers what the registry needs to know about enrollment tokens.
type TokenInfo interface {
	// TokenName returns the name of a token id ("" if unknown).
	TokenName(id string) string
	// TokenLabels returns the labels of a token id (nil if unknown).
	TokenLabels(id string) map[string]string
}

// Load builds a registry from what st holds and starts its write-behind loop.
func Load(ctx context.Context, st store.Agents, tokens TokenInfo, log *slog.Logger, opts Options) (*Registry, error) {
	opts.defaults()
	r := &Registry{
		opts:           opts,
		log:            log,
		store:          st,
		agents:         map[uuid.UUID]*agent{},
		tokens:         tokens,
		pendingRows:    map[uuid.UUID]stamp.Stamp{},
		pendingSeen:    map[uuid.UUID]struct{}{},
		pendingEvents:  map[uuid.UUID][]store.Event{},
		pendingReports: map[reportKey]store.Report{},
		pendingConns:   map[uuid.UUID]bool{},
		stop:           make(chan struct{}),
		done:           make(chan struct{}),
		registrations:  newRegistrationLimit(opts.NewAgentsPerMinute, opts.Now),
	}
	r.history, _ = st.(store.History)
	recs, events, err := st.LoadAgents(ctx, MaxEvents)
	if err != nil {
		return nil, fmt.Errorf("load agents: %w", err)
	}
	r.agents = make(map[uuid.UUID]*agent, len(recs))
	r.unsorted = make([]uuid.UUID, 0, len(recs))
	for i, a := range r.build(recs, events) {
		r.agents[a.uid] = a
		r.noteNewLocked(a.uid)
		if len(recs[i].Description) > MaxDescriptionBytes+4096 {
			// Stored unbounded by an earlier version: store what is kept.
			r.pendingRows[a.uid] = a.lastSeen
		}
	}
	go r.loop()
	return r, nil
}

// build turns stored records into agents: decoding descriptions and
// health, applying the attribute rules and labels. The records are
// independent, so they are split among GOMAXPROCS goroutines; the agents
// live in one array (a pruned agent is cleared, see prune.go).
func (r *Registry) build(recs []store.Agent, events map[[16]byte][]store.Event) []*agent {
	all := make([]agent, len(recs))
	out := make([]*agent, len(recs))
	workers := min(runtime.GOMAXPROCS(0), (len(recs)+999)/1000)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*len(recs)/workers, (w+1)*len(recs)/workers
		wg.Go(func() {
			dd := newDescDecoder()
			for i := lo; i < hi; i++ {
				r.fromRecord(dd, &all[i], &recs[i], events[recs[i].UID], nil)
				out[i] = &all[i]
			}
		})
	}
	wg.Wait()
	return out
}

// fromRecord fills a from a stored record; safe to run concurrently before
// the registry is in use (it reads only the inventory and token names).
// held, when not nil, is the record held of the agent until now: a
// description it holds already is not decoded again.
func (r *Registry) fromRecord(dd *descDecoder, a *agent, rec *store.Agent, events []store.Event, held *agent) {
	*a = agent{
		uid:          uuid.UUID(rec.UID),
		cred:         r.creds.share(rec.Credential),
		kind:         codeOf(Kind(rec.Kind)),
		descSum:      descSumOf(rec.Description),
		capabilities: rec.Capabilities,
		tokenLabels:  r.labelSets.share(rec.TokenLabels),
		persisted:    true,
		firstSeen:    stamp.Of(rec.FirstSeen),
		lastSeen:     stamp.Of(rec.LastSeen),
		extra:        extraOf(rec.Extra),
	}
	if rec.Instance != "" {
		a.instance = r.instances.share(rec.Instance)
	}
	a.setHistory(events)
	if n := len(events); n > 0 {
		a.nextSeq = events[n-1].Seq
	}
	var ds *described
	switch {
	case held != nil && held.hasDesc && a.descSum != 0 && held.descSum == a.descSum:
		// The row's description is the one held (a connection that closed,
		// a new last-seen time): its view stands, relabelled if need be.
		a.desc, a.labels, a.hasDesc = held.desc, held.labels, true
	case len(rec.Description) > 0:
		if d, err := dd.decode(rec.Description); err != nil {
			r.log.Warn("stored description unreadable; waiting for the agent to report it", "agent", a.uid, "err", err)
		} else {
			dsv := describe(d)
			ds, a.hasDesc = &dsv, true
		}
	}
	if len(rec.Health) > 0 {
		a.health, a.hasHealth = string(rec.Health), true
	}
	r.relabelLocked(a, ds) // Load calls this before the registry is shared, Merge with r.mu held
}

// Observe registers fn to be called after relevant changes. Call before traffic starts.
func (r *Registry) Observe(fn Observer) {
	r.mu.Lock()
	r.observers = append(r.observers, fn)
	r.mu.Unlock()
}

func (r *Registry) notify(uids ...uuid.UUID) {
	r.mu.RLock()
	obs := r.observers
	r.mu.RUnlock()
	for _, fn := range obs {
		for _, u := range uids {
			fn(u)
		}
	}
	for _, u := range uids {
		r.notifyWatchers(u)
	}
}

// ConflictError is returned when a UID is presented with another credential
// than the one it is bound to. Nothing is recorded of it: the caller
// records the refusals it should with RecordConflict.
type ConflictError struct {
	UID       uuid.UUID
	Presented store.Credential
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("instance %s is bound to another credential; %s %q may not use it", e.UID, e.Presented.Kind, e.Presented.ID)
}

// ReportResult tells the connection layer what to answer.
type ReportResult struct {
	// FullState asks the agent to report its full state (ReportFullState flag).
	FullState bool
	// New is true for the agent's first registration.
	New bool
	// Opened, for the first message on a WebSocket, is when the registry
	// counts the connection opened: ReplacedElsewhere names connections
	// by it.
	Opened time.Time
}

// Report records one AgentToServer message from an agent that authenticated
// with cred. viaHTTP marks plain-HTTP polling (online by recency, not by a socket).
// firstOnConn is true for the first message on a WebSocket connection, which
// is when the connection is counted. A UID bound to another credential is
// refused with a *ConflictError, and the agent is left as it was.
func (r *Registry) Report(uid uuid.UUID, cred store.Credential, msg *protobufs.AgentToServer, viaHTTP, firstOnConn bool) (ReportResult, error) {
	now := r.opts.Now()
	var res ReportResult
	r.mu.Lock()
	a, ok := r.agents[uid]
	if ok && *a.cred != cred {
		r.mu.Unlock()
		return res, &ConflictError{UID: uid, Presented: cred}
	}
	changed := false
	if !ok {
		if wait, ok := r.registrations.allow(cred); !ok {
			r.mu.Unlock()
			r.registrations.logRefusal(r.log, cred)
			return res, &RegistrationLimitError{Credential: cred, RetryAfter: wait}
		}
		a = &agent{uid: uid, cred: r.creds.share(cred), kind: codeOf(KindUnknown), firstSeen: stamp.Of(now), tokenLabels: map[string]string{}}
		r.agents[uid] = a
		r.noteNewLocked(uid)
		res.New = true
		changed = true
		r.addEventLocked(a, now, EventRegistered, fmt.Sprintf("registered with %s %q", cred.Kind, cred.ID))
	}
	if res.New && cred.Kind == "token" {
		a.tokenLabels = r.tokenLabelsOf(cred.ID)
	}
	wasOnline := a.online(now, r.opts.HTTPOnlineWindow)
	a.lastSeen = stamp.Of(now)
	a.httpSeen = viaHTTP
	if firstOnConn {
		a.conns++
		res.Opened = now
		if r.opts.Instance != "" {
			// Its row names this instance and the newest connection's
			// opening (see elsewhere.go).
			r.pendingConns[uid] = true
			a.instance, a.leftAt, a.remoteUntil = r.instances.share(r.opts.Instance), stamp.Of(now), 0
		}
	}
	if !wasOnline {
		changed = true
	}

	// Status compression: a gap in sequence numbers, or an unknown description,
	// means our copy may be stale.
	if a.seqKnown && msg.SequenceNum != a.lastMsgSeq+1 && msg.SequenceNum != a.lastMsgSeq {
		res.FullState = true
	}
	if firstOnConn && !a.seqKnown && msg.AgentDescription == nil {
		res.FullState = true // first contact since this server started: we cannot tell what we missed
	}
	a.lastMsgSeq, a.seqKnown = msg.SequenceNum, true

	var newDesc *described
	if d := msg.AgentDescription; d != nil {
		ds := describe(d)
		a.descSum = descSumOf(ds.encoded())
		newDesc, a.hasDesc = &ds, true
		for _, w := range ds.warnings {
			r.addEventLocked(a, now, w.typ, w.msg)
		}
		changed = true
	}
	if !a.hasDesc {
		res.FullState = true
	}
	if msg.Capabilities != 0 && msg.Capabilities != a.capabilities {
		a.capabilities = msg.Capabilities
		changed = true
	}
	if msg.Health != nil {
		h, note := boundHealth(msg.Health)
		if note != "" {
			r.addEventLocked(a, now, EventHealthLimit, note)
		}
		if b, err := marshalDeterministic(h); err == nil {
			a.health, a.hasHealth = string(b), true
		}
		r.pendingRows[uid] = stamp.Of(now)
	}
	if changed {
		r.relabelLocked(a, newDesc)
		if k := Classify(a.desc.Identifying(), a.desc.NonIdentifying(), a.capabilities); k != a.kind.Kind() {
			if a.kind.Kind() != KindUnknown || !res.New {
				r.addEventLocked(a, now, EventKindChanged, fmt.Sprintf("kind %s → %s", a.kind.Kind(), k))
			}
			a.kind = codeOf(k)
		}
		r.pendingRows[uid] = stamp.Of(now)
	} else {
		r.pendingSeen[uid] = struct{}{}
	}
	durable := a.persisted
	r.mu.Unlock()
	if !durable {
		if err := r.makeDurable(uid); err != nil {
			return res, err
		}
	}
	if changed {
		r.notify(uid)
	}
	return res, nil
}

// Disconnected records that one WebSocket connection of uid closed.
func (r *Registry) Disconnected(uid uuid.UUID) {
	r.mu.Lock()
	a, ok := r.agents[uid]
	if ok && a.conns > 0 {
		a.conns--
		a.lastSeen = stamp.Of(r.opts.Now())
		r.pendingSeen[uid] = struct{}{}
		if a.conns == 0 && r.opts.Instance != "" {
			r.pendingConns[uid] = false
			// Unless a newer connection to another instance replaced those
			// here (its row names that one: see elsewhere.go), it is
			// connected nowhere, as far as this instance knows.
			if a.instanceName() == r.opts.Instance {
				a.instance, a.leftAt = nil, a.lastSeen
			}
		}
	}
	r.mu.Unlock()
	if ok {
		r.notify(uid)
	}
}

// AddEvent records an event in uid's history; false if the agent is unknown.
func (r *Registry) AddEvent(uid uuid.UUID, typ, msg string) bool {
	r.mu.Lock()
	a, ok := r.agents[uid]
	now := r.opts.Now()
	if ok {
		r.addEventLocked(a, now, typ, msg)
	}
	r.mu.Unlock()
	if ok {
		r.notifyWatchers(uid)
		if fn := r.onEvent.Load(); fn != nil {
			(*fn)(uid, typ, msg, now)
		}
	}
	return ok
}

// OnEvent makes fn see every event AddEvent records from now on: the
// events this instance observes (not those merged from other instances'
// records). fn is called after the registry's lock is released, on the
// caller's goroutine, which may hold its own locks: fn must not block or
// call back into the caller.
func (r *Registry) OnEvent(fn func(uid uuid.UUID, typ, msg string, at time.Time)) {
	r.onEvent.Store(&fn)
}

// SetExtra replaces the feature-owned JSON of uid (persisted with the agent).
func (r *Registry) SetExtra(uid uuid.UUID, extra []byte) {
	r.mu.Lock()
	a, ok := r.agents[uid]
	if ok {
		a.extra = extraOf(extra)
		r.pendingRows[uid] = stamp.Of(r.opts.Now())
	}
	r.mu.Unlock()
	if ok {
		r.notifyWatchers(uid)
	}
}

// Get returns a snapshot of one agent with its history.
func (r *Registry) Get(uid uuid.UUID) (Agent, bool) {
	r.mu.RLock()
	a, ok := r.agents[uid]
	if !ok {
		r.mu.RUnlock()
		return Agent{}, false
	}
	snap := a.snapshot(r.opts.Now(), r.opts.HTTPOnlineWindow, true)
	inStore := a.historyInStore
	r.mu.RUnlock()
	if inStore {
		snap.Events = r.storedHistory(uid, snap.Events)
	}
	return snap, true
}

// List returns snapshots sorted by UID; kind "" means all kinds.
func (r *Registry) List(kind Kind, withEvents bool) []Agent {
	list, _ := r.Page(PageQuery{Kind: kind, WithEvents: withEvents})
	return list
}

// Counts returns the number of online agents by kind.
func (r *Registry) Counts() map[Kind]int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	now := r.opts.Now()
	out := map[Kind]int{}
	for _, a := range r.agents {
		if a.online(now, r.opts.HTTPOnlineWindow) {
			out[a.kind.Kind()]++
		}
	}
	return out
}

// UIDsByCredential returns the agents bound to a credential.
func (r *Registry) UIDsByCredential(cred store.Credential) []uuid.UUID {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []uuid.UUID
	for _, a := range r.agents {
		if *a.cred == cred {
			out = append(out, a.uid)
		}
	}
	return out
}

// relabelLocked rebuilds the derived label set and view, with the
// attributes of ds when it is not nil (a new description), else with those
// the agent has; caller holds r.mu.
func (r *Registry) relabelLocked(a *agent, ds *described) {
	labels := make(map[string]string, len(a.tokenLabels))
	for k, v := range a.tokenLabels {
		labels[k] = v
	}
	if a.cred.Kind == "token" && r.tokens != nil {
		for k, v := range r.inventory.ByToken[r.tokens.TokenName(a.cred.ID)] {
			labels[k] = v
		}
	}
	for k, v := range r.inventory.ByUID[a.uid] {
		labels[k] = v
	}
	before := a.labels
	a.labels = r.labelSets.share(labels)
	if ds == nil && a.desc.View.Known() && maps.Equal(before, a.labels) {
		return // the same attributes and labels: the view stands
	}
	if ds != nil {
		a.desc = attributes.Describe(ds.identifying, ds.nonIdentifying, labels, &r.keySets)
	} else {
		a.desc = a.desc.Relabel(labels, &r.keySets)
	}
}

// Peek returns a snapshot without the event history (cheap).
func (r *Registry) Peek(uid uuid.UUID) (Agent, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.agents[uid]
	if !ok {
		return Agent{}, false
	}
	return a.snapshot(r.opts.Now(), r.opts.HTTPOnlineWindow, false), true
}
