package cluster

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/tokens"
)

// Source reads what the other instances wrote (the PostgreSQL store).
type Source interface {
	LoadAgents(ctx context.Context, keepEvents int) ([]store.Agent, map[[16]byte][]store.Event, error)
	LoadAgentsByUID(ctx context.Context, uids [][16]byte, keepEvents int) ([]store.Agent, map[[16]byte][]store.Event, error)
	SeenSince(ctx context.Context, t time.Time) (map[[16]byte]time.Time, error)
	Beat(ctx context.Context, id string, at time.Time) error
	Instances(ctx context.Context, t time.Time) (map[string]time.Time, error)
	ForgetInstance(ctx context.Context, id string, t time.Time) error
	LoadConfigsByUID(ctx context.Context, uids [][16]byte) (map[[16]byte][]byte, error)
	LoadBodies(ctx context.Context, hashes []string) (map[string][]byte, error)
	LoadOffersByUID(ctx context.Context, uids [][16]byte) (map[[16]byte][]byte, error)
	store.Configs
	store.Offers
	store.Reports
	store.State
}

// Configs is the instance's configuration engine, as a follower sees it.
type Configs interface {
	// Merge takes the leader's assignment records and returns the hashes
	// it lacks a body for.
	Merge(assignments map[[16]byte][]byte) (missing []string)
	AddBodies(bodies map[string][]byte)
}

// Offers is the instance's offers engine, as a follower sees it.
type Offers interface {
	// Mirror takes the leader's records of collectors.
	Mirror(records map[[16]byte][]byte)
}

// Decider is a feature whose decisions only the leading instance makes;
// the others deliver them to the agents connected to them.
type Decider interface {
	// Lead makes the instance decide, from what the store holds.
	Lead(ctx context.Context) error
	// Follow stops it deciding.
	Follow()
	// ApplyReports acts on agents' reports (those of its features).
	ApplyReports(reps []store.Report)
	// ReloadState reads the server state the leader wrote (rollouts).
	ReloadState(ctx context.Context) error
}

// Tokens is the instance's token book.
type Tokens interface {
	// Reload reads the tokens again and returns those newly revoked.
	Reload(ctx context.Context) ([]tokens.Token, error)
}

// Disconnector closes this instance's connections of a credential.
type Disconnector interface {
	DisconnectCredential(cred store.Credential) int
}

// SyncOptions tune a Sync.
type SyncOptions struct {
	// Lease: an agent connected to another instance is online until this
	// long after the last-seen time that instance wrote (3 heartbeats).
	Lease time.Duration
	// Sweep is how often leases are renewed from the database (a heartbeat).
	Sweep time.Duration
	Log   *slog.Logger
	// Instance names this instance; Leader and Revision (its estate's
	// revision), when set, make it publish or check the leader's state.
	Instance string
	Leader   *Leader
	Revision func() string
	// Configs and Offers, when set, receive the leader's records.
	Configs Configs
	Offers  Offers
	// Deciders lead or follow with this instance (Leader must be set).
	Deciders []Decider
	// Requests, when set, carries operator actions to the leader.
	Requests *Requests
	// Notifier, when set, announces this instance's taking the lead to the
	// others (see followLeader).
	Notifier *Notifier
	// ReadBudget bounds each read from the store that applying a change
	// makes (a chunk of the agents it names, every agent, the reports):
	// default a minute.
	ReadBudget time.Duration
}

// Sync applies the other instances' changes to this instance: agents to
// the registry, tokens to the book (disconnecting agents of tokens revoked
// elsewhere), the leader's decisions to the features, agents' reports to
// the leader's features, relayed events to the histories of agents
// connected here; and renews the leases of agents connected elsewhere.
type Sync struct {
	src  Source
	reg  *registry.Registry
	book Tokens
	disc Disconnector
	opts SyncOptions

	mu     sync.Mutex
	status Status // guarded by mu
	// leaderSeen is the leader (instance and since) this instance last
	// read, when following; guarded by mu.
	leaderSeen string

	mismatches int // guarded by mu; consecutive checks that found another estate than the leader's

	// merging orders the merges of agents' rows: each reads the store and
	// merges before the next reads, so a row read earlier never replaces
	// one merged meanwhile (a takeover's full read against the changes
	// handled while it reads).
	merging sync.Mutex

	roleWake chan struct{}
	led      bool // the deciders lead; owned by roleLoop

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewSync prepares a Sync; give its Handle to Notifier.Start, then Start it.
func NewSync(src Source, reg *registry.Registry, book Tokens, disc Disconnector, opts SyncOptions) *Sync {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Sync{src: src, reg: reg, book: book, disc: disc, opts: opts, stop: make(chan struct{}), roleWake: make(chan struct{}, 1)}
}

func (s *Sync) leaseUntil(lastSeen time.Time) time.Time { return lastSeen.Add(s.opts.Lease) }

func (s *Sync) leading() bool { return s.opts.Leader != nil && s.opts.Leader.Leading() }

// defaultReadBudget is SyncOptions.ReadBudget's default.
const defaultReadBudget = time.Minute

// readBudget bounds one read of a change: a change's reads have one each,
// so merging a large backlog, chunk after chunk on a busy instance, is not
// cut short by the time the chunks before took.
func (s *Sync) readBudget() time.Duration {
	if s.opts.ReadBudget > 0 {
		return s.opts.ReadBudget
	}
	return defaultReadBudget
}

// Handle applies one change of another instance. An error means the
// change was not (wholly) applied: its kind, or the one an *Owed names,
// is to be read again in full.
func (s *Sync) Handle(c Change) error {
	if c.Kind == KindAgents {
		return s.mergeAgents(c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.readBudget())
	defer cancel()
	switch c.Kind {
	case KindReports:
		return s.applyReports(ctx, c)
	case KindOffers:
		if s.opts.Offers != nil {
			return s.mirrorOffers(ctx, c)
		}
	case KindConfigs:
		if s.opts.Configs != nil {
			return s.mergeConfigs(ctx, c)
		}
	case KindState:
		var errs []error
		for _, d := range s.opts.Deciders {
			if err := d.ReloadState(ctx); err != nil {
				errs = append(errs, fmt.Errorf("reading the state the leader wrote: %w", err))
			}
		}
		return errors.Join(append(errs, s.followLeader(ctx))...)
	case KindTokens:
		revoked, err := s.book.Reload(ctx)
		if err != nil {
			return fmt.Errorf("reloading tokens another instance changed: %w", err)
		}
		for _, t := range revoked {
			n := s.disc.DisconnectCredential(store.Credential{Kind: "token", ID: t.ID})
			s.opts.Log.Info("token revoked on another instance; its agents here disconnected", "token", t.ID, "agents", n)
		}
	case KindRelay:
		var uids [][16]byte
		if !c.Resync {
			uids = parseUIDs(c.IDs)
		}
		return s.takeRelayed(ctx, uids, c.Resync)
	case KindRequest:
		if s.opts.Requests != nil {
			s.opts.Requests.serve(ctx, c)
		}
	case KindDone:
		if s.opts.Requests != nil {
			s.opts.Requests.done(c)
		}
	}
	return nil
}

func (s *Sync) mergeAgents(c Change) error {
	s.merging.Lock()
	n, read, err := s.loadAndMergeLocked(context.Background(), c)
	s.merging.Unlock()
	if err != nil {
		return fmt.Errorf("reading agents another instance changed: %w", err)
	}
	if !c.Resync {
		return nil
	}
	s.opts.Log.Info("agents reloaded from the store", "agents", read, "merged", n)
	// A report of an agent unknown until now may have been passed over.
	ctx, cancel := context.WithTimeout(context.Background(), s.readBudget())
	defer cancel()
	if err := s.applyReports(ctx, Change{Kind: KindReports, Resync: true}); err != nil {
		return &Owed{Kind: KindReports, Err: err}
	}
	return nil
}

// mergeChunk bounds the agents read and merged at once: a change that
// names many (a backlog coalesced) holds a chunk's rows at a time, not all.
const mergeChunk = 2000

// loadAndMergeLocked reads the agents of a change and merges them; it
// returns how many were merged of how many read. A resync reads every
// agent and merges those whose row differs from what this instance holds
// (last-seen times aside: the sweeps renew leases), so that what follows
// a merge (pairing, offers, configuration) is redone only for them. Each
// read has the read budget within ctx. Caller holds s.merging.
func (s *Sync) loadAndMergeLocked(ctx context.Context, c Change) (merged, read int, err error) {
	if c.Resync {
		rctx, cancel := context.WithTimeout(ctx, s.readBudget())
		recs, events, err := s.src.LoadAgents(rctx, s.reg.MergeEvents())
		cancel()
		if err != nil {
			return 0, 0, err
		}
		return s.reg.Merge(s.reg.Outdated(recs, events), events, s.leaseUntil), len(recs), nil
	}
	for uids := range slices.Chunk(parseUIDs(c.IDs), mergeChunk) {
		rctx, cancel := context.WithTimeout(ctx, s.readBudget())
		recs, events, err := s.src.LoadAgentsByUID(rctx, uids, s.reg.MergeEvents())
		cancel()
		if err != nil {
			return merged, read, err
		}
		merged += s.reg.Merge(recs, events, s.leaseUntil)
		read += len(recs)
		s.reg.Gone(missing(uids, recs))
	}
	return merged, read, nil
}

// missing are the uids of a change whose rows the store no longer holds:
// deleted by the instance that published the change.
func missing(uids [][16]byte, recs []store.Agent) []uuid.UUID {
	found := make(map[[16]byte]bool, len(recs))
	for _, r := range recs {
		found[r.UID] = true
	}
	var out []uuid.UUID
	for _, u := range uids {
		if !found[u] {
			out = append(out, uuid.UUID(u))
		}
	}
	return out
}

// applyReports hands the reports of a change to the deciders when this
// instance leads.
func (s *Sync) applyReports(ctx context.Context, c Change) error {
	if !s.leading() || len(s.opts.Deciders) == 0 {
		return nil
	}
	var uids [][16]byte
	if !c.Resync {
		if uids = parseUIDs(c.IDs); len(uids) == 0 {
			return nil
		}
	}
	reps, err := s.src.LoadReports(ctx, uids)
	if err != nil {
		return fmt.Errorf("reading agents' reports: %w", err)
	}
	for _, d := range s.opts.Deciders {
		d.ApplyReports(reps)
	}
	return nil
}

func (s *Sync) mirrorOffers(ctx context.Context, c Change) error {
	var recs map[[16]byte][]byte
	var err error
	if c.Resync {
		recs, err = s.src.LoadOffers(ctx)
	} else if uids := parseUIDs(c.IDs); len(uids) > 0 {
		recs, err = s.src.LoadOffersByUID(ctx, uids)
	}
	if err != nil {
		return fmt.Errorf("reading the leader's offer records: %w", err)
	}
	if len(recs) > 0 {
		s.opts.Offers.Mirror(recs)
	}
	return nil
}

func (s *Sync) mergeConfigs(ctx context.Context, c Change) error {
	var assignments map[[16]byte][]byte
	var err error
	if c.Resync {
		assignments, _, err = s.src.LoadConfigs(ctx)
	} else if uids := parseUIDs(c.IDs); len(uids) > 0 {
		assignments, err = s.src.LoadConfigsByUID(ctx, uids)
	}
	if err != nil {
		return fmt.Errorf("reading configuration assignments another instance changed: %w", err)
	}
	if missing := s.opts.Configs.Merge(assignments); len(missing) > 0 {
		bodies, err := s.src.LoadBodies(ctx, missing)
		if err != nil {
			return fmt.Errorf("reading configuration bodies another instance stored: %w", err)
		}
		s.opts.Configs.AddBodies(bodies)
	}
	return nil
}

// followLeader reads the decisions again when another instance leads
// than the one this instance last read of. The leader announces its
// decisions after writing them; one that dies in between leaves the
// others without the announcement of what it wrote last (the new leader
// reads it from the store). Run by Handle, so the reads are ordered with
// the announcements of what the new leader writes. The leader is taken as
// read only once its decisions were.
func (s *Sync) followLeader(ctx context.Context) error {
	if s.leading() {
		return nil
	}
	ls, err := s.readLeader(ctx)
	if err != nil {
		return fmt.Errorf("reading the leader's state: %w", err)
	}
	seen := ls.key()
	s.mu.Lock()
	changed := seen != s.leaderSeen
	s.mu.Unlock()
	if !changed {
		return nil
	}
	if ls != nil {
		if s.opts.Offers != nil {
			if err := s.mirrorOffers(ctx, Change{Kind: KindOffers, Resync: true}); err != nil {
				return err
			}
		}
		if s.opts.Configs != nil {
			if err := s.mergeConfigs(ctx, Change{Kind: KindConfigs, Resync: true}); err != nil {
				return err
			}
		}
	}
	s.mu.Lock()
	s.leaderSeen = seen
	s.mu.Unlock()
	return nil
}

// takeRelayed adds to the histories of agents connected here the events
// other instances relayed to them (uids nil: of every agent with events
// waiting); the leader also takes those of agents connected nowhere, whose
// rows it may write.
func (s *Sync) takeRelayed(ctx context.Context, uids [][16]byte, all bool) error {
	if all {
		var err error
		if uids, err = s.src.RelayedAgents(ctx); err != nil {
			return fmt.Errorf("listing relayed events: %w", err)
		}
	}
	if len(uids) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(uids))
	for i := range uids {
		ids[i] = uuid.UUID(uids[i])
	}
	mine := s.reg.Connected(ids)
	if all && s.leading() {
		for _, uid := range ids {
			if a, ok := s.reg.Peek(uid); !ok || !a.Online {
				mine = append(mine, uid)
			}
		}
	}
	if len(mine) == 0 {
		return nil
	}
	take := make([][16]byte, len(mine))
	for i := range mine {
		take[i] = mine[i]
	}
	evs, err := s.src.TakeRelayed(ctx, take)
	if err != nil {
		return fmt.Errorf("taking relayed events: %w", err)
	}
	for uid, e := range evs {
		s.reg.AddEvents(uid, e)
	}
	return nil
}

// parseUIDs decodes hex instance UIDs, skipping malformed ones.
func parseUIDs(ids []string) [][16]byte {
	uids := make([][16]byte, 0, len(ids))
	for _, id := range ids {
		if b, err := hex.DecodeString(id); err == nil && len(b) == 16 {
			uids = append(uids, [16]byte(b))
		}
	}
	return uids
}

// Start renews leases now, before it returns (an instance that starts
// knows at once which agents are connected to the others), and then every
// Sweep until Close; it follows the leader's changes of role.
func (s *Sync) Start() {
	s.sweep()
	s.mu.Lock()
	if s.leaderSeen == "" && !s.status.Leading {
		s.leaderSeen = s.status.Leader.key() // what this instance loaded is as new
	}
	s.mu.Unlock()
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(s.opts.Sweep)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.sweep()
			}
		}
	}()
	go s.roleLoop()
}

// sweep says this instance lives, and renews the leases of the agents
// connected elsewhere: those of live instances, and those connected to none
// (plain HTTP) seen within a lease.
func (s *Sync) sweep() {
	// As long as a lease: a busy database may take a while.
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Lease)
	defer cancel()
	now := time.Now()
	if err := s.src.Beat(ctx, s.opts.Instance, now); err != nil {
		s.opts.Log.Warn("telling the other instances this one lives failed", "err", err)
	}
	live, err := s.src.Instances(ctx, now.Add(-s.opts.Lease))
	if err != nil {
		s.opts.Log.Warn("reading which instances live failed", "err", err)
		return
	}
	seen, err := s.src.SeenSince(ctx, now.Add(-s.opts.Lease))
	if err != nil {
		s.opts.Log.Warn("renewing the leases of agents on other instances failed", "err", err)
		return
	}
	s.reg.SeenElsewhere(seen, live, s.leaseUntil)
	s.checkLeader(ctx)
	// Events relayed to an agent that moved on, or went offline, before
	// the instance it was connected to took them.
	if err := s.takeRelayed(ctx, nil, true); err != nil {
		s.opts.Log.Warn("taking events relayed to agents that moved failed", "err", err)
	}
	s.wakeRole()
}

// LeaderChanged is given to Leader.Start: a new leader publishes its
// state at once rather than at the next sweep, and the deciders change
// role.
func (s *Sync) LeaderChanged(bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.checkLeader(ctx)
	s.wakeRole()
}

func (s *Sync) wakeRole() {
	select {
	case s.roleWake <- struct{}{}:
	default:
	}
}

// roleLoop makes the deciders lead while this instance leads, and follow
// otherwise, one change at a time. A leader's deciders first read what
// the store holds, then act on every report (those written while no
// instance led included), then take the events relayed to agents
// connected nowhere.
func (s *Sync) roleLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.roleWake:
		}
		leading := s.leading()
		if leading == s.led || len(s.opts.Deciders) == 0 {
			continue
		}
		if !leading {
			for _, d := range s.opts.Deciders {
				d.Follow()
			}
			s.led = false
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		err := s.lead(ctx)
		cancel()
		if err != nil {
			// Tried again at the next sweep.
			s.opts.Log.Error("taking over the decisions failed", "err", err)
			for _, d := range s.opts.Deciders {
				d.Follow()
			}
			continue
		}
		s.led = true
	}
}

func (s *Sync) lead(ctx context.Context) error {
	t0 := time.Now()
	caught, err := s.catchUp(ctx)
	if err != nil {
		return err
	}
	for _, d := range s.opts.Deciders {
		if err := d.Lead(ctx); err != nil {
			return err
		}
	}
	// Reports this instance recorded while following may still wait in
	// its write-behind: written now, they are in the read below (their
	// notification goes to the other instances only). What agents report
	// from now on the deciders act on here.
	if err := s.reg.Flush(); err != nil {
		return fmt.Errorf("writing this instance's pending reports before deciding: %w", err)
	}
	reps, err := s.src.LoadReports(ctx, nil)
	if err != nil {
		return err
	}
	for _, d := range s.opts.Deciders {
		d.ApplyReports(reps)
	}
	if err := s.takeRelayed(ctx, nil, true); err != nil {
		// The sweeps take them later.
		s.opts.Log.Warn("taking events relayed to agents connected nowhere failed", "err", err)
	}
	s.opts.Log.Info("this instance decides rollouts", "reports", len(reps), "agents caught up", caught, "took", time.Since(t0).Round(time.Millisecond))
	return nil
}

// catchUp merges every agent whose row the store holds newer than this
// instance does, before it decides: the notifications of the last
// changes other instances wrote (the previous leader's last ones among
// them) may still be queued, and deciding on older copies would offer
// collectors again the versions they already run.
func (s *Sync) catchUp(ctx context.Context) (int, error) {
	s.merging.Lock()
	defer s.merging.Unlock()
	merged, _, err := s.loadAndMergeLocked(ctx, Change{Kind: KindAgents, Resync: true})
	if err != nil {
		return 0, fmt.Errorf("reading the agents before deciding: %w", err)
	}
	return merged, nil
}

// Close stops the sweeps, and says this instance no longer lives (the
// others show its agents offline at once rather than when its lease
// ends), forgetting instances dead for long.
func (s *Sync) Close() {
	select {
	case <-s.stop:
		return
	default:
		close(s.stop)
	}
	s.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.src.ForgetInstance(ctx, s.opts.Instance, time.Now().Add(-24*time.Hour)); err != nil {
		s.opts.Log.Warn("telling the other instances this one stops failed", "err", err)
	}
}
