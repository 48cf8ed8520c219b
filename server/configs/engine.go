package configs

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/blueprint"
	"github.com/myriarch/myriarch/internal/configrender"
	"github.com/myriarch/myriarch/internal/intern"
	"github.com/myriarch/myriarch/internal/stamp"
	"github.com/myriarch/myriarch/internal/writebehind"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/rollout"
	"github.com/myriarch/myriarch/server/store"
)

// Sender delivers a message to an agent over its WebSocket at once and
// reports whether it could (opampsrv.Server.Send).
type Sender interface {
	Send(uid uuid.UUID, msg *protobufs.ServerToAgent) bool
}

// Store is what the engine persists: assignments and bodies, and the
// fleets' rollout states.
type Store interface {
	store.Configs
	store.State
}

// HostContext supplies what a collector's host adds to its render input:
// the context (with its variables' types) and dynamic mappings its linked
// updater reports (hosts without a linked updater have none). For is
// called with the Engine's lock held and must not call back into the
// Engine, nor change what it returns later; tell the Engine of changes
// with ContextChanged.
type HostContext interface {
	For(collector uuid.UUID) (configrender.Input, bool)
}

// Where a render's context came from (the assignment's "context").
const (
	ContextAttributes        = "attributes"
	ContextAttributesUpdater = "attributes+updater"
)

// Options configure an Engine.
type Options struct {
	// Shared: several instances share the store, and only the one that
	// leads decides (renders, moves desired through the waves, counts
	// failures, collects bodies). The engine starts following — it takes
	// the leader's records (Merge), sends their desired configurations to
	// the agents connected here and reports what those agents say
	// (registry SetReport) — until Lead.
	Shared bool
	// Requests, when set, carries the operator actions of the admin API to
	// the leading instance; without it they act here.
	Requests admin.Requests
	Now      func() time.Time
	// Notice is told when a fleet's rollout pauses or resumes.
	Notice rollout.Notice
	// Estate, when set, is in force from the start.
	Estate *estate.Estate
	// Host, when set, adds the host's providers to render inputs; the
	// attribute view wins over its context on equal keys.
	Host HostContext
	// ResendAfter is how long the engine waits for an agent to report the
	// desired hash before sending it again (default 30 s).
	ResendAfter time.Duration
	// StuckAfter is how long an agent may stay unhealthy while it reports
	// APPLYING for its desired configuration before the configuration
	// counts as FAILED (default 30 s): a Supervisor restarted with a
	// rejected configuration cached crash-loops the collector and never
	// reports FAILED.
	StuckAfter time.Duration
	// FlushEvery is how often changed assignments are written (default 250 ms).
	FlushEvery time.Duration
	// Senders is how many goroutines deliver configurations (default 4).
	Senders int
}

// Engine is safe for concurrent use. Its methods may be called in any
// order after New; Close stops the senders and writes what is pending.
type Engine struct {
	opts Options
	log  *slog.Logger
	reg  *registry.Registry
	st   Store

	mu sync.Mutex
	// role: whether this instance decides (always without
	// Options.Shared); guarded by mu.
	role rollout.Role
	est  *estate.Estate // guarded by mu
	// inline: renders an evaluation needs are made under mu (while a new
	// estate or the lead is taken, when every agent must be rendered before
	// any wave gate is judged); otherwise the context worker makes them
	// without it. Guarded by mu.
	inline    bool
	templates map[string]*template
	records   map[uuid.UUID]*record
	fleets    map[string]*fleetRollout
	// stored are the rollout states last read from the store; a follower
	// gives them to fleets new to it (the leader may have written them
	// before this instance's estate had the fleet). Guarded by mu.
	stored map[string]rolloutState
	bodies map[string][]byte
	// defined caches what bodies define (see effective.go); it has its
	// own lock.
	defined *definedCache
	// What the next flush writes, guarded by mu.
	dirty     map[uuid.UUID]struct{}
	newBodies map[string][]byte
	gone      []string

	// strs shares equal strings of records (hashes, fleet names,
	// revisions); guarded by mu.
	strs intern.Table

	// Collectors whose host context changed, evaluated by contextWorker.
	ctxMu      sync.Mutex
	ctxPending map[uuid.UUID]struct{} // guarded by ctxMu
	ctxWake    chan struct{}

	actions *admin.Actions

	// outbox holds the agents to send their desired configuration to:
	// what is sent is decided when one is taken, so the latest wins.
	outbox *rollout.Queue[struct{}]
	// rollouts keeps the fleets' rollout states; set once by New.
	rollouts *rollout.States
	writes   *writebehind.Writer // set once by New
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// New loads the stored assignments, evaluates every agent of the registry
// against opts.Estate, and starts the senders and the writer.
func New(ctx context.Context, reg *registry.Registry, st Store, send Sender, log *slog.Logger, opts Options) (*Engine, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ResendAfter <= 0 {
		opts.ResendAfter = 30 * time.Second
	}
	if opts.StuckAfter <= 0 {
		opts.StuckAfter = 30 * time.Second
	}
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = 250 * time.Millisecond
	}
	if opts.Senders <= 0 {
		opts.Senders = 4
	}
	e := &Engine{
		opts: opts, log: log, reg: reg, st: st,
		templates:  map[string]*template{},
		records:    map[uuid.UUID]*record{},
		fleets:     map[string]*fleetRollout{},
		dirty:      map[uuid.UUID]struct{}{},
		newBodies:  map[string][]byte{},
		defined:    newDefinedCache(),
		strs:       intern.Table{Max: 1 << 16},
		outbox:     rollout.NewQueue[struct{}](),
		ctxPending: map[uuid.UUID]struct{}{},
		ctxWake:    make(chan struct{}, 1),
		stop:       make(chan struct{}),
		role:       rollout.NewRole(opts.Shared),
	}
	e.actions = admin.NewActions(opts.Requests, e.Leading)
	e.rollouts = rollout.NewStates(st, rolloutKey, "configuration rollout state", log)
	assignments, bodies, err := st.LoadConfigs(ctx)
	if err != nil {
		return nil, err
	}
	e.bodies = bodies
	stored, err := e.loadFleetStates(ctx)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.stored = stored
	for uid, data := range assignments {
		var p persisted
		if err := p.unmarshal(data, e.strs.Bytes); err != nil {
			e.log.Error("stored configuration assignment unreadable; the agent is assigned anew", "agent", uuid.UUID(uid), "err", err)
			continue
		}
		r := newRecord(uid)
		r.restore(p)
		e.records[uid] = r
	}
	for _, a := range reg.List("", false) {
		e.absorb(a)
	}
	// Records of agents the registry no longer has are kept (and stored)
	// but not evaluated.
	e.setEstateLocked(opts.Estate, stored, nil)
	e.mu.Unlock()
	e.flush()
	e.writes = writebehind.Start(opts.FlushEvery, e.flush)
	e.outbox.Serve(opts.Senders, func(uid uuid.UUID, _ struct{}) { e.send(send, uid) })
	e.wg.Add(1)
	go e.contextWorker()
	reg.Observe(e.AgentChanged)
	return e, nil
}

// Close stops the senders and the writer and writes what is pending.
func (e *Engine) Close() {
	e.stopOnce.Do(func() {
		close(e.stop)
		e.outbox.Close()
		e.wg.Wait()
		e.writes.Close()
	})
}

// forget drops an agent the registry pruned (its stored assignment went
// with it); bodies only it named are collected at the next estate change.
// Caller holds e.mu.
func (e *Engine) forget(uid uuid.UUID) {
	r := e.records[uid]
	if r == nil {
		return
	}
	e.uncount(r)
	delete(e.records, uid)
	delete(e.dirty, uid)
}

// absorb records an agent's facts; it reports whether the agent is one the
// engine configures. Caller holds e.mu.
func (e *Engine) absorb(a registry.Agent) bool {
	if a.Kind != registry.KindCollector && a.Kind != registry.KindBridge {
		if r := e.records[a.UID]; r != nil {
			e.uncount(r)
			r.kind = a.Kind
		}
		return false
	}
	r := e.records[a.UID]
	if r == nil {
		r = newRecord(a.UID)
		e.records[a.UID] = r
	}
	if r.online && !a.Online {
		r.sendAgain() // a new connection is sent the desired config again
	}
	r.kind, r.view, r.online, r.connected, r.firstSeen = a.Kind, a.Attributes, a.Online, a.Connected, stamp.Of(a.FirstSeen)
	r.accepts = a.HasCapability(protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig)
	return true
}

// AgentChanged is the registry observer: the agent's description,
// capabilities or connection changed. A render it needs is made in the
// caller's goroutine (the agent's own message, as a rule) before the
// Engine's lock is taken for the evaluation.
func (e *Engine) AgentChanged(uid uuid.UUID) {
	e.mu.Lock()
	a, ok := e.reg.Peek(uid)
	if !ok {
		e.forget(uid)
		e.mu.Unlock()
		return
	}
	if !e.absorb(a) {
		e.mu.Unlock()
		return
	}
	if !e.role.Leads() {
		e.pushIfDue(e.records[uid])
		e.mu.Unlock()
		return
	}
	work := map[uuid.UUID]struct{}{uid: {}}
	jobs := e.jobsLocked(work, e.est, e.templates)
	if len(jobs) > 0 {
		e.mu.Unlock()
		renderJobs(jobs)
		e.mu.Lock()
	}
	e.evaluate(work)
	e.kick()
	e.mu.Unlock()
}

// ContextChanged tells the engine that what the host of collector uid adds
// to its render input may have changed (a new providers snapshot, a new
// link). It never blocks and takes no lock of the Engine's, so it may be
// called from anywhere; the collector is evaluated soon after, once however
// often it was told.
func (e *Engine) ContextChanged(uid uuid.UUID) {
	e.ctxMu.Lock()
	e.ctxPending[uid] = struct{}{}
	e.ctxMu.Unlock()
	select {
	case e.ctxWake <- struct{}{}:
	default:
	}
}

// contextWorker evaluates the collectors ContextChanged named, until Close.
func (e *Engine) contextWorker() {
	defer e.wg.Done()
	for {
		select {
		case <-e.stop:
			return
		case <-e.ctxWake:
		}
		e.ctxMu.Lock()
		work := e.ctxPending
		e.ctxPending = map[uuid.UUID]struct{}{}
		e.ctxMu.Unlock()
		e.mu.Lock()
		for uid := range work {
			if r := e.records[uid]; r == nil || !r.view.Known() {
				delete(work, uid)
			}
		}
		jobs := e.jobsLocked(work, e.est, e.templates)
		e.mu.Unlock()
		renderJobs(jobs)
		e.mu.Lock()
		e.evaluate(work)
		e.kick()
		e.mu.Unlock()
	}
}

// SetEstate applies a new estate: fleets and Blueprints. Only agents whose
// fleet, Blueprint source or context changed are rendered again. The
// Blueprints are compiled and the agents' configurations rendered before
// the Engine's lock is taken, so agents are served meanwhile; the new
// estate then takes effect for every agent at once.
func (e *Engine) SetEstate(est *estate.Estate) {
	e.mu.Lock()
	prev, lead := e.templates, e.role.Leads()
	e.mu.Unlock()
	var templates map[string]*template
	if lead {
		templates = compileAll(blueprintsOf(est), blueprintIDs(est), prev)
		e.mu.Lock()
		all := make(map[uuid.UUID]struct{}, len(e.records))
		for uid := range e.records {
			all[uid] = struct{}{}
		}
		jobs := e.jobsLocked(all, est, templates)
		e.mu.Unlock()
		renderJobs(jobs)
	}
	e.mu.Lock()
	if !e.role.Leads() {
		templates = nil // no longer leading: nothing to render
	}
	e.setEstateLocked(est, nil, templates)
	e.mu.Unlock()
	e.requestFlush()
}

// blueprintIDs lists the Blueprints est's fleets configure with.
func blueprintIDs(est *estate.Estate) []string {
	if est == nil {
		return nil
	}
	var ids []string
	for _, def := range est.Fleets {
		if def.Config != nil {
			ids = append(ids, def.Config.Blueprint)
		}
	}
	return ids
}

func blueprintsOf(est *estate.Estate) *blueprint.Estate {
	if est == nil {
		return nil
	}
	return est.Blueprints
}

// setEstateLocked rebuilds the fleets (restoring stored rollout states when
// given) and templates (compiled already when given), then evaluates every
// configurable agent; renders the agents need that were not made before the
// lock was taken are made under it. A follower only rebuilds the fleets, to
// show the leader's records in them.
func (e *Engine) setEstateLocked(est *estate.Estate, stored map[string]rolloutState, templates map[string]*template) {
	e.est = est
	if !e.role.Leads() {
		e.followFleets()
		return
	}
	old := e.fleets
	e.fleets = map[string]*fleetRollout{}
	if est != nil {
		if templates == nil {
			templates = compileAll(est.Blueprints, blueprintIDs(est), e.templates)
		}
		e.templates = templates
		for _, def := range est.Fleets {
			if def.Config == nil {
				continue
			}
			f := newFleetRollout(def)
			tm := e.templates[def.Config.Blueprint]
			switch prev, ok := old[def.Name]; {
			case ok:
				f.rolloutState = prev.rolloutState
			case stored != nil:
				f.rolloutState = stored[def.Name]
			}
			if f.Since.IsZero() {
				f.Since = e.opts.Now().UTC()
				f.dirty = true
			}
			if f.Digest != tm.digest {
				// A new configuration starts a new rollout; an operator's
				// pause holds it too, until resumed.
				f.rolloutState = rolloutState{Digest: tm.digest, Since: f.Since, State: f.Restart()}
				f.dirty = true
			}
			e.fleets[def.Name] = f
		}
	} else {
		e.templates = map[string]*template{}
	}
	for name := range old {
		if _, ok := e.fleets[name]; !ok {
			e.rollouts.Delete(name)
		}
	}
	work := make(map[uuid.UUID]struct{}, len(e.records))
	for uid, r := range e.records {
		r.countedIn = ""
		if r.view.Known() && (r.kind == registry.KindCollector || r.kind == registry.KindBridge) {
			work[uid] = struct{}{}
		}
	}
	// Every agent is rendered before any wave gate is judged.
	e.inline = true
	e.evaluate(work)
	e.inline = false
	e.saveFleets()
	e.collectBodies()
}

// inputOf is an agent's render input: the host's context, then its
// attribute view (which wins: fleets select on it), and the host's dynamic
// mappings; and where the context came from.
func (e *Engine) inputOf(r *record) (configrender.Input, string) {
	if e.opts.Host == nil {
		return configrender.Input{Context: r.view.Map()}, ContextAttributes
	}
	host, ok := e.opts.Host.For(r.uid)
	if !ok {
		return configrender.Input{Context: r.view.Map()}, ContextAttributes
	}
	ctx := make(configrender.Context, len(host.Context)+r.view.Len())
	for k, v := range host.Context {
		ctx[k] = v
	}
	types, own := host.Types, false
	for k, v := range r.view.All() {
		ctx[k] = v
		if types[k] != "" { // the attribute view's value, a string, wins
			if !own {
				types, own = maps.Clone(host.Types), true
			}
			delete(types, k)
		}
	}
	return configrender.Input{Context: ctx, Types: types, Dynamic: host.Dynamic}, ContextAttributesUpdater
}

// evaluate recomputes the given agents, and then those of waves whose gate
// opened as a consequence. Every agent is assigned, rendered and counted
// before any moves desired, so a wave gate is never judged on partial
// counts. Only the leading instance evaluates. Caller holds e.mu.
func (e *Engine) evaluate(work map[uuid.UUID]struct{}) {
	if !e.role.Leads() {
		return
	}
	for len(work) > 0 {
		recs := make([]*record, 0, len(work))
		for uid := range work {
			if r := e.records[uid]; r != nil {
				recs = append(recs, r)
			}
		}
		sort.Slice(recs, func(i, j int) bool { return string(recs[i].uid[:]) < string(recs[j].uid[:]) })
		gates := rollout.Gates{}
		note := func(name string) {
			if f := e.fleets[name]; f != nil {
				gates.Note(f.waves)
			}
		}
		before := make([]persisted, len(recs))
		fleets := make([]*fleetRollout, len(recs))
		for i, r := range recs {
			before[i] = r.persisted()
			note(r.fleet)
			f, problem := e.fleetOf(r)
			if problem != "" {
				e.assignmentError(r, problem)
			} else {
				e.renderFor(r, f)
			}
			fleets[i] = f
			e.count(r)
			note(r.fleet)
		}
		for i, r := range recs {
			e.advance(r, fleets[i])
			e.count(r)
			if !before[i].equal(r.persisted()) {
				e.dirty[r.uid] = struct{}{}
			}
			r.shed()
		}
		work = e.opened(gates)
	}
}

// opened returns the members of waves whose gate opened since gates were
// noted that have a configuration to move to.
func (e *Engine) opened(gates rollout.Gates) map[uuid.UUID]struct{} {
	next := map[uuid.UUID]struct{}{}
	for m := range gates.Opened() {
		if r := e.records[m]; r != nil && r.desired != r.assigned {
			next[m] = struct{}{}
		}
	}
	return next
}

// fleetOf assigns the agent to a fleet with a configuration, or none.
func (e *Engine) fleetOf(r *record) (*fleetRollout, string) {
	r.fleet = ""
	if e.est == nil {
		return nil, ""
	}
	def, err := e.est.FleetFor(r.view)
	if err != nil {
		// Which configuration applies is unclear: keep what the agent has.
		return nil, err.Error()
	}
	if def == nil || def.Config == nil {
		return nil, ""
	}
	r.fleet = def.Name
	f := e.fleets[def.Name]
	if f == nil {
		return nil, ""
	}
	r.wave = int32(f.waveOf(r.view))
	return f, ""
}

// assignmentError records a problem that keeps the assigned hash as it is.
func (e *Engine) assignmentError(r *record, msg string) {
	if msg != r.err {
		e.event(r, "config_assignment_error", msg+"; the assigned configuration is kept")
	}
	d := r.own()
	d.err = msg
	d.input = "" // render again once the problem is gone
}

// renderFor computes the assigned hash. A render error keeps the previous
// assigned hash; leaving every fleet with a configuration clears it.
func (e *Engine) renderFor(r *record, f *fleetRollout) {
	if f == nil || (r.kind == registry.KindBridge && !f.def.Config.Bridges) {
		if r.assigned != "" || r.desired != "" || r.err != "" {
			if r.assigned != "" {
				e.event(r, "config_unassigned", "no configuration is assigned any more (the agent left its fleet or the fleet has no config)")
			}
			e.setWarnings(r, nil)
			d := r.own()
			d.assigned, d.desired, d.err, d.input, d.blueprint, d.revision, d.source = "", "", "", "", "", "", ""
			d.sentHash, d.sentAt = "", 0
		}
		if f != nil {
			d := r.own()
			d.blueprint = f.def.Config.Blueprint
			d.err = "fleet " + f.def.Name + " does not configure Bridges: set config.bridges: true to opt in"
		}
		return
	}
	tm := e.templates[f.def.Config.Blueprint]
	d := r.own()
	d.blueprint = f.def.Config.Blueprint
	input, source := e.inputOf(r)
	d.source = source
	key := tm.key(input)
	in := tm.inputOf(input)
	if in == r.input && (r.assigned != "" || r.err != "") {
		return
	}
	res, ok := tm.cached(key)
	switch {
	case ok:
	case e.inline:
		res = tm.render(input, key)
	default:
		// Rendered without the lock by the context worker, which then
		// evaluates r again; until then r keeps what it is assigned.
		e.renderLater(r.uid)
		return
	}
	d.input = in
	if res.err != nil {
		msg := renderMessage(tm.id, res.err)
		if msg != r.err {
			e.event(r, "config_render_error", msg)
		}
		d.err = msg
		return
	}
	e.keepBody(res.hash, res.body)
	d.err = ""
	e.setWarnings(r, res.warnings)
	if h := res.hash; h != r.assigned {
		d.assigned = h
		d.revision = e.revision()
		e.event(r, "config_assigned", "assigned configuration "+short(h)+" of blueprint "+tm.id+" at revision "+orNone(r.revision))
	}
}

// setWarnings makes ws what r's configuration leaves out: each new one is
// an event. Caller holds e.mu.
func (e *Engine) setWarnings(r *record, ws []configrender.Warning) {
	if slices.Equal(ws, r.warnings) {
		return
	}
	for _, w := range ws {
		if !slices.Contains(r.warnings, w) {
			e.event(r, "config_warning", w.String())
		}
	}
	r.own().warnings = ws
}

// WarningCounts returns the warnings of every configured agent, by kind,
// and how many agents have any (under "collectors").
func (e *Engine) WarningCounts() (byKind map[string]int, collectors int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	byKind = map[string]int{}
	for _, r := range e.records {
		if len(r.warnings) > 0 {
			collectors++
		}
		for _, w := range r.warnings {
			byKind[w.Kind]++
		}
	}
	return byKind, collectors
}

// renderLater has the context worker render uid's configuration without
// the lock, then evaluate it. Caller holds e.mu.
func (e *Engine) renderLater(uid uuid.UUID) {
	e.ContextChanged(uid)
}

// jobsLocked lists the renders the given agents need under est and
// templates that no template has cached. Caller holds e.mu.
func (e *Engine) jobsLocked(uids map[uuid.UUID]struct{}, est *estate.Estate, templates map[string]*template) []renderJob {
	if est == nil || !e.role.Leads() {
		return nil
	}
	var jobs []renderJob
	for uid := range uids {
		r := e.records[uid]
		if r == nil || !r.view.Known() || (r.kind != registry.KindCollector && r.kind != registry.KindBridge) {
			continue
		}
		def, err := est.FleetFor(r.view)
		if err != nil || def == nil || def.Config == nil || (r.kind == registry.KindBridge && !def.Config.Bridges) {
			continue
		}
		tm := templates[def.Config.Blueprint]
		if tm == nil || tm.t == nil {
			continue
		}
		input, _ := e.inputOf(r)
		key := tm.key(input)
		if _, ok := tm.cached(key); !ok {
			jobs = append(jobs, renderJob{tm: tm, in: input, key: key})
		}
	}
	return jobs
}

// advance moves desired toward assigned, through the fleet's waves.
func (e *Engine) advance(r *record, f *fleetRollout) {
	switch {
	case r.assigned == "":
		return
	case r.isFailed(r.assigned):
		// Never offered again automatically: stay on (or return to) the
		// last applied configuration.
		if r.applied != "" && r.desired != r.applied && !r.isFailed(r.applied) {
			e.setDesired(r, r.applied, "config_rolled_back", "rolled back to the last applied configuration "+short(r.applied))
		}
	case r.desired == r.assigned:
	case r.desired == "" && r.applied == "" && f != nil && r.firstSeen.Time().After(f.Since):
		e.setDesired(r, r.assigned, "config_desired", "bootstrap: configuration "+short(r.assigned)+" is offered at once")
	case f == nil:
	case f.Paused:
	case f.waves.GateOpen(int(r.wave)):
		e.setDesired(r, r.assigned, "config_desired", "configuration "+short(r.assigned)+" is offered (wave open)")
	}
	e.pushIfDue(r)
}

func (e *Engine) setDesired(r *record, h, typ, msg string) {
	r.own().desired = h
	r.sendAgain()
	e.event(r, typ, msg)
}

// shouldSend reports whether the agent should be sent its desired
// configuration now. Caller holds e.mu.
func (e *Engine) shouldSend(r *record) bool {
	if !r.accepts || r.desired == "" || r.isFailed(r.desired) || r.failing == r.desired {
		return false
	}
	if r.reported.Hash == r.desired && r.reported.Status != StatusFailed && !r.notEffective() {
		return false // it runs it, or is applying it
	}
	if r.reported.Hash == r.desired && interrupted(r.reported) && !r.tracking().unhealthySince.IsZero() {
		return false // sent again once the collector is healthy
	}
	if _, ok := e.bodies[r.desired]; !ok {
		return false
	}
	return r.sentHash != r.desired || e.opts.Now().Sub(r.sentAt.Time()) >= e.opts.ResendAfter
}

// event adds an agent event. Caller holds e.mu.
func (e *Engine) event(r *record, typ, msg string) {
	e.reg.AddEvent(r.uid, typ, msg)
}

func (e *Engine) revision() string {
	if e.est == nil {
		return ""
	}
	return e.est.Revision
}

// pushIfDue queues r's desired configuration for its WebSocket when it
// should be sent. Caller holds e.mu.
func (e *Engine) pushIfDue(r *record) {
	if r != nil && r.connected && e.shouldSend(r) {
		e.outbox.Push(r.uid, struct{}{})
	}
}

// keepBody stores a newly rendered body. Caller holds e.mu.
func (e *Engine) keepBody(h string, body []byte) {
	if _, ok := e.bodies[h]; ok {
		return
	}
	e.bodies[h] = body
	e.newBodies[h] = body
}

// collectBodies forgets bodies no agent refers to. Caller holds e.mu.
func (e *Engine) collectBodies() {
	used := map[string]bool{}
	for _, r := range e.records {
		for _, h := range append([]string{r.assigned, r.desired, r.applied, r.reported.Hash}, r.failed...) {
			used[h] = true
		}
	}
	for _, tm := range e.templates {
		tm.forget(used)
	}
	for h := range e.bodies {
		if !used[h] {
			delete(e.bodies, h)
			delete(e.newBodies, h)
			e.gone = append(e.gone, h)
		}
	}
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
