package cluster

import (
	"context"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/tokens"
)

// Source reads what the other instances wrote (the PostgreSQL store).
type Source interface {
	LoadAgents(ctx context.Context, keepEvents int) ([]store.Agent, map[[16]byte][]store.Event, error)
	LoadAgentsByUID(ctx context.Context, uids [][16]byte, keepEvents int) ([]store.Agent, map[[16]byte][]store.Event, error)
	SeenSince(ctx context.Context, t time.Time) (map[[16]byte]time.Time, error)
	LoadConfigsByUID(ctx context.Context, uids [][16]byte) (map[[16]byte][]byte, error)
	LoadBodies(ctx context.Context, hashes []string) (map[string][]byte, error)
	store.Configs
	store.State
}

// Configs is the instance's configuration engine.
type Configs interface {
	// Merge takes assignment records written elsewhere and returns the
	// hashes it lacks a body for.
	Merge(assignments map[[16]byte][]byte) (missing []string)
	AddBodies(bodies map[string][]byte)
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
	// Configs, when set, receives the configuration assignments written elsewhere.
	Configs Configs
}

// Sync applies the other instances' changes to this instance: agents to
// the registry, tokens to the book (disconnecting agents of tokens revoked
// elsewhere), and renews the leases of agents connected elsewhere.
type Sync struct {
	src  Source
	reg  *registry.Registry
	book Tokens
	disc Disconnector
	opts SyncOptions

	mu     sync.Mutex
	status Status // guarded by mu

	mismatches int // guarded by mu; consecutive checks that found another estate than the leader's

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewSync prepares a Sync; give its Handle to Notifier.Start, then Start it.
func NewSync(src Source, reg *registry.Registry, book Tokens, disc Disconnector, opts SyncOptions) *Sync {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Sync{src: src, reg: reg, book: book, disc: disc, opts: opts, stop: make(chan struct{})}
}

func (s *Sync) leaseUntil(lastSeen time.Time) time.Time { return lastSeen.Add(s.opts.Lease) }

// Handle applies one change of another instance.
func (s *Sync) Handle(c Change) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	switch c.Kind {
	case KindAgents:
		var recs []store.Agent
		var events map[[16]byte][]store.Event
		var err error
		if c.Resync {
			recs, events, err = s.src.LoadAgents(ctx, registry.MaxEvents)
		} else {
			uids := parseUIDs(c.IDs)
			if len(uids) == 0 {
				return
			}
			recs, events, err = s.src.LoadAgentsByUID(ctx, uids, registry.MaxEvents)
		}
		if err != nil {
			s.opts.Log.Warn("reading agents another instance changed failed", "resync", c.Resync, "err", err)
			return
		}
		n := s.reg.Merge(recs, events, s.leaseUntil)
		if c.Resync {
			s.opts.Log.Info("agents reloaded from the store", "agents", len(recs), "merged", n)
		}
	case KindConfigs:
		if s.opts.Configs != nil {
			s.mergeConfigs(ctx, c)
		}
	case KindTokens:
		revoked, err := s.book.Reload(ctx)
		if err != nil {
			s.opts.Log.Warn("reloading tokens another instance changed failed", "err", err)
			return
		}
		for _, t := range revoked {
			n := s.disc.DisconnectCredential(store.Credential{Kind: "token", ID: t.ID})
			s.opts.Log.Info("token revoked on another instance; its agents here disconnected", "token", t.ID, "agents", n)
		}
	}
}

func (s *Sync) mergeConfigs(ctx context.Context, c Change) {
	var assignments map[[16]byte][]byte
	var err error
	if c.Resync {
		assignments, _, err = s.src.LoadConfigs(ctx)
	} else if uids := parseUIDs(c.IDs); len(uids) > 0 {
		assignments, err = s.src.LoadConfigsByUID(ctx, uids)
	}
	if err != nil {
		s.opts.Log.Warn("reading configuration assignments another instance changed failed", "resync", c.Resync, "err", err)
		return
	}
	if missing := s.opts.Configs.Merge(assignments); len(missing) > 0 {
		bodies, err := s.src.LoadBodies(ctx, missing)
		if err != nil {
			s.opts.Log.Warn("reading configuration bodies another instance stored failed", "err", err)
			return
		}
		s.opts.Configs.AddBodies(bodies)
	}
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
// Sweep until Close.
func (s *Sync) Start() {
	s.sweep()
	s.wg.Add(1)
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
}

func (s *Sync) sweep() {
	// As long as a lease: a busy database may take a while for every agent.
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Lease)
	defer cancel()
	seen, err := s.src.SeenSince(ctx, time.Now().Add(-s.opts.Lease))
	if err != nil {
		s.opts.Log.Warn("renewing the leases of agents on other instances failed", "err", err)
		return
	}
	s.reg.SeenElsewhere(seen, s.leaseUntil)
	s.checkLeader(ctx)
}

// LeaderChanged is given to Leader.Start: a new leader publishes its
// state at once rather than at the next sweep.
func (s *Sync) LeaderChanged(bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.checkLeader(ctx)
}

// Close stops the sweeps.
func (s *Sync) Close() {
	select {
	case <-s.stop:
		return
	default:
		close(s.stop)
	}
	s.wg.Wait()
}
