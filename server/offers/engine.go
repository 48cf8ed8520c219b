// Package offers turns fleets into package offers: it assigns each collector
// to a fleet, decides whether its linked updater should be offered the
// fleet's target version, gates offers by rollout waves, tracks the
// updater's package statuses, quarantines failed hashes and pauses rollouts
// that fail too often. Every change is evaluated incrementally: only the
// agents it touches are recomputed.
//
// With several instances on one store (Options.Shared) the leading
// instance decides: fleet assignment, wave gates, failure counts and
// pauses, the offer each collector's updater gets. The others take its
// records (Mirror) to show them and to deliver those offers to the
// updaters connected to them, and report those updaters' package statuses
// for it (ReportFeature).
package offers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/internal/intern"
	"github.com/myriarch/myriarch/internal/stamp"
	"github.com/myriarch/myriarch/internal/writebehind"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/pairing"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/rollout"
	"github.com/myriarch/myriarch/server/store"
)

// Offer states.
const (
	UpToDate      = "up_to_date"
	WaitingWave   = "waiting_wave"
	Offered       = "offered"
	Downloading   = "downloading"
	Installing    = "installing"
	Installed     = "installed"
	Failed        = "failed"
	HeldAmbiguous = "held_ambiguous"
	NoUpdater     = "no_updater"
	NoArtifact    = "no_artifact"
	Paused        = "paused"
	// NotOffered: the collector's fleet has a package, but no offer can be
	// made (a version that is not one); the offer's error says why.
	NotOffered = "not_offered"
)

// Sender delivers a message to an agent (opampsrv.Server.Send).
type Sender interface {
	Send(uid uuid.UUID, msg *protobufs.ServerToAgent) bool
}

// Options configure an Engine.
type Options struct {
	// Shared: several instances share the store, and only the one that
	// leads decides. The engine starts following — it takes the leader's
	// records (Mirror), delivers their offers to the updaters connected
	// here, reports their package statuses (registry SetReport) and
	// forwards operator actions (Forward) — until Lead.
	Shared bool
	// Requests, when set, carries the operator actions of the admin API to
	// the leading instance (see Ops); without it they act here.
	Requests admin.Requests
	// BaseURL returns the absolute base URL of the OpAMP listener, for
	// artifact download URLs (e.g. http://127.0.0.1:4320).
	BaseURL func() string
	// Senders is how many goroutines deliver offers (default 8).
	Senders int
	Now     func() time.Time
	// Notice is told when a fleet's rollout pauses or resumes.
	Notice rollout.Notice
	// Estate, when set, is in force from the start, so the agents loaded
	// from the store are evaluated once, against it, instead of first
	// without fleets and again on SetEstate.
	Estate *estate.Estate
}

// Engine is safe for concurrent use.
type Engine struct {
	opts  Options
	log   *slog.Logger
	reg   *registry.Registry
	state store.State

	// mu guards the fields marked so; helpers that need it held end in
	// Locked. New fills them before the engine is shared, without it.
	// Lock order: mu, then the registry's lock (events, reports).
	mu sync.Mutex
	// role: whether this instance decides (always without Options.Shared).
	role       rollout.Role             // guarded by mu
	ix         *pairing.Index           // guarded by mu
	est        *estate.Estate           // guarded by mu
	collectors map[uuid.UUID]*collector // guarded by mu
	updaters   map[uuid.UUID]*updater   // guarded by mu
	fleets     map[string]*fleet        // guarded by mu
	// desired is the PackagesAvailable each updater should hold.
	desired map[uuid.UUID]*protobufs.PackagesAvailable // guarded by mu
	// offeredTo is, when following, the collector whose offer each
	// updater should hold (the leader's record names the updater).
	offeredTo map[uuid.UUID]uuid.UUID // guarded by mu
	// acked is the all_packages_hash each updater last reported having seen.
	acked map[uuid.UUID][]byte // guarded by mu

	versions map[string]parsedVersion          // guarded by mu
	packages map[pkgKey]*estate.PackageVersion // guarded by mu
	offers   map[builtKey]builtOffer           // guarded by mu

	// extensions add to the fleets API; linkObservers learn of pairing
	// changes.
	extensions    []FleetExtension            // guarded by mu
	linkObservers []func(collector uuid.UUID) // guarded by mu

	// strs shares the strings of restored records, specs the offers
	// collectors hold (see detail.go); guarded by mu.
	strs  intern.Table
	specs intern.Values[offerSpec]

	// records keeps each collector's record (nil: none are kept); dirty
	// are those to write.
	records store.Offers           // set once by New
	dirty   map[uuid.UUID]struct{} // guarded by mu
	writes  *writebehind.Writer    // set once by New

	// rollouts keeps the fleets' rollout states; set once by New.
	rollouts *rollout.States
	// stored are the rollout states last read from the store (by fleet); a
	// follower gives them to fleets new to it, as the leader may have
	// written them before this instance's estate had the fleet. Guarded
	// by mu.
	stored map[string][]byte

	actions *admin.Actions // set once by New

	// outbox holds the offers to push to connected updaters.
	outbox   *rollout.Queue[*protobufs.PackagesAvailable]
	stopOnce sync.Once
}

// collector is the engine's record of one collector; guarded by Engine.mu.
// What every collector has is here; what only a collector with an offer,
// an error or failed hashes has is in its offerDetail, which the records
// of the other collectors share (noOffer): read through the embedded
// pointer, written through own or the setters, given back by shed (see
// detail.go).
type collector struct {
	uid     uuid.UUID
	view    attributes.View
	version string
	online  bool
	wave    int32
	fleet   string
	target  string
	state   string // "" when not assigned
	updated stamp.Stamp
	countFl string // the fleet whose wave counts hold it
	// reportAt is when the last package status applied was received.
	reportAt stamp.Stamp

	*offerDetail
}

// Progress is the last download progress reported.
type Progress struct {
	Percent     float64 `json:"percent"`
	BytesPerSec float64 `json:"bytesPerSecond"`
}

// updater is the engine's record of one updater; guarded by Engine.mu.
type updater struct {
	uid     uuid.UUID
	view    attributes.View // os.type and host.arch, read when an offer is built
	mode    string
	online  bool
	accepts bool
}

// New builds the engine from the registry's current agents and starts its
// senders and writer. When st is also a store.Offers, the engine keeps its
// record of each collector there (otherwise it keeps none).
func New(ctx context.Context, reg *registry.Registry, st store.State, send Sender, log *slog.Logger, opts Options) (*Engine, error) {
	if opts.Senders <= 0 {
		opts.Senders = 8
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	e := &Engine{
		opts: opts, log: log, reg: reg, state: st,
		ix:         pairing.New(),
		collectors: map[uuid.UUID]*collector{},
		updaters:   map[uuid.UUID]*updater{},
		fleets:     map[string]*fleet{},
		desired:    map[uuid.UUID]*protobufs.PackagesAvailable{},
		offeredTo:  map[uuid.UUID]uuid.UUID{},
		acked:      map[uuid.UUID][]byte{},
		role:       rollout.NewRole(opts.Shared),
		outbox:     rollout.NewQueue[*protobufs.PackagesAvailable](),
		versions:   map[string]parsedVersion{},
		dirty:      map[uuid.UUID]struct{}{},
	}
	e.records, _ = st.(store.Offers)
	e.rollouts = rollout.NewStates(st, rolloutKey, "rollout state", log)
	e.actions = admin.NewActions(opts.Requests, e.Leading)
	e.resetCachesLocked()
	if err := e.loadFleetStates(ctx); err != nil {
		return nil, err
	}
	stored, err := e.loadRecords(ctx)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if opts.Estate != nil {
		e.est = opts.Estate
		e.syncFleetsLocked()
	}
	e.loadLocked(reg.List("", false), stored)
	if e.role.Leads() {
		e.reevaluateAllLocked()
	} else {
		e.recountAllLocked()
		for _, c := range e.collectors {
			if c.to != uuid.Nil {
				e.offeredTo[c.to] = c.uid
			}
		}
	}
	dirty := e.dirtyFleetsLocked()
	e.mu.Unlock()
	e.saveFleets(dirty)
	e.flush()
	e.writes = writebehind.Start(flushEvery, e.flush)
	e.outbox.Serve(opts.Senders, func(upd uuid.UUID, pas *protobufs.PackagesAvailable) {
		send.Send(upd, &protobufs.ServerToAgent{PackagesAvailable: pas})
	})
	reg.Observe(e.AgentChanged)
	return e, nil
}

// Close stops the senders and the writer and writes what is pending.
func (e *Engine) Close() {
	e.stopOnce.Do(func() {
		e.outbox.Close()
		e.writes.Close()
	})
}

func (e *Engine) collectorRecLocked(uid uuid.UUID) *collector {
	c := e.collectors[uid]
	if c == nil {
		c = newCollector(uid)
		e.collectors[uid] = c
	}
	return c
}

// testHookPeeked lets a test act between reading an agent and using it.
var testHookPeeked func()

// AgentChanged is the registry observer. It reads the agent under e.mu:
// notifications for one agent can run at once on different connections (a
// collector's old socket closing while its new one reports), and a snapshot
// read before the lock could be applied after a newer one, moving an
// up-to-date collector back to "offered".
func (e *Engine) AgentChanged(uid uuid.UUID) {
	e.mu.Lock()
	a, ok := e.reg.Peek(uid)
	if testHookPeeked != nil {
		testHookPeeked()
	}
	if !ok {
		// Pruned from the registry: forget it as an agent of no kind
		// (records, counts and pairing claims go).
		a = registry.Agent{UID: uid, Kind: registry.KindUnknown}
	}
	work := e.absorbLocked(a)
	if e.role.Leads() {
		e.evaluateLocked(work)
	} else if a.Kind == registry.KindUpdater {
		e.deliverToLocked(a.UID, false)
	}
	e.mu.Unlock()
}

// absorbLocked records an agent's facts and returns the collectors to re-evaluate.
func (e *Engine) absorbLocked(a registry.Agent) map[uuid.UUID]struct{} {
	work := map[uuid.UUID]struct{}{}
	pa := e.absorbFactsLocked(a, work)
	for _, ch := range e.ix.Update(pa) {
		work[ch.Collector] = struct{}{}
		if e.role.Leads() {
			e.pairingEventLocked(ch)
		}
		for _, fn := range e.linkObservers {
			fn(ch.Collector)
		}
	}
	return work
}

// absorbFactsLocked records an agent's facts in the engine's own records and
// returns what pairing needs to know. It adds to work the collectors to
// re-evaluate whatever pairing then says.
func (e *Engine) absorbFactsLocked(a registry.Agent, work map[uuid.UUID]struct{}) pairing.Agent {
	f := factsOf(a)
	switch a.Kind {
	case registry.KindCollector:
		c := e.collectorRecLocked(a.UID)
		c.view, c.version, c.online = a.Attributes, f.version, a.Online
		work[a.UID] = struct{}{}
	case registry.KindUpdater:
		e.updaters[a.UID] = f.updater
		if s, ok := e.ix.Updater(a.UID); ok && s.Collector != uuid.Nil {
			work[s.Collector] = struct{}{}
		}
		if f.pairing.HasClaim {
			work[f.pairing.Claim] = struct{}{}
		}
	default:
		if c, ok := e.collectors[a.UID]; ok {
			e.uncountLocked(c)
			delete(e.collectors, a.UID)
		}
		delete(e.updaters, a.UID)
		delete(e.acked, a.UID)
	}
	return f.pairing
}

func (e *Engine) pairingEventLocked(ch pairing.Change) {
	switch {
	case ch.New.State == pairing.Ambiguous && ch.Old.State != pairing.Ambiguous:
		e.reg.AddEvent(ch.Collector, "pairing_ambiguous", "more than one online updater claims this collector: "+uidList(ch.New.Claimants)+"; offers are held")
	case ch.Old.State == pairing.Ambiguous && ch.New.State != pairing.Ambiguous:
		msg := "pairing is no longer ambiguous"
		if ch.New.State == pairing.Linked {
			msg += "; linked to updater " + ch.New.Updater.String()
		}
		e.reg.AddEvent(ch.Collector, "pairing_resolved", msg)
	case ch.New.State == pairing.Linked && ch.Old.Updater != ch.New.Updater:
		e.reg.AddEvent(ch.Collector, "pairing_linked", "linked to updater "+ch.New.Updater.String())
	}
}

func uidList(u []uuid.UUID) string {
	s := ""
	for i, x := range u {
		if i > 0 {
			s += ", "
		}
		s += x.String()
	}
	return s
}

// SetEstate applies a new estate: fleets and catalog; every collector is re-evaluated.
func (e *Engine) SetEstate(est *estate.Estate) {
	e.mu.Lock()
	e.est = est
	e.resetCachesLocked()
	e.syncFleetsLocked()
	if !e.role.Leads() {
		// The leader decides with the new estate; until its records come,
		// this instance shows and delivers what it decided last.
		e.applyFleetStatesLocked(e.stored)
		e.recountAllLocked()
		for upd := range e.offeredTo {
			e.deliverToLocked(upd, false)
		}
		e.mu.Unlock()
		return
	}
	e.reevaluateAllLocked()
	dirty := e.dirtyFleetsLocked()
	e.mu.Unlock()
	e.saveFleets(dirty)
}

func (e *Engine) reevaluateAllLocked() {
	work := make(map[uuid.UUID]struct{}, len(e.collectors))
	for uid := range e.collectors {
		work[uid] = struct{}{}
	}
	e.evaluateLocked(work)
}
