package server

import (
	"net/http"
	"time"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/cluster"
	"github.com/myriarch/myriarch/server/metrics"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/postgres"
)

// With a PostgreSQL store the instance shares the estate with every other
// instance on the database: what it writes is announced to them, and what
// they write is merged into its registry (server/cluster).

// heartbeat is the interval offered to agents.
func (o *Options) heartbeat() time.Duration {
	if o.Heartbeat > 0 {
		return o.Heartbeat
	}
	return 30 * time.Second
}

// clusterStore returns the store the parts use: db itself, or with a
// PostgreSQL store db announcing its writes to the other instances.
func (s *Server) clusterStore(db store.Store) store.Store {
	pg, ok := db.(*postgres.DB)
	if !ok {
		return db
	}
	log := s.log.With("component", "cluster")
	s.notifier = cluster.NewNotifier(pg.Pool(), log, cluster.NotifierOptions{})
	// Listening from before the agents are loaded: what the others change
	// meanwhile waits in the notifier's queue (or becomes a resync).
	s.notifier.Start()
	s.publisher = cluster.Publishing(db, s.notifier)
	// Only the leader writes decisions; it campaigns once everything is built.
	s.leader = cluster.NewLeader(pg.Pool(), cluster.LeaderOptions{Log: log})
	pg.SetFence(s.leader.Fence)
	s.requests = cluster.NewRequests(s.notifier, log, s.leader.Leading, func() {
		s.offers.Flush()
		s.configs.Flush()
	})
	return s.publisher
}

// shared reports whether this instance shares its store with others.
func (s *Server) shared() bool { return s.notifier != nil }

// actionRequests carries the admin API's operator actions to the leading
// instance (nil: this instance is the only one).
func (s *Server) actionRequests() admin.Requests {
	if s.requests == nil {
		return nil
	}
	return s.requests
}

// registryOptions: in a cluster, last-seen times are written every
// heartbeat, since the other instances' leases of this instance's agents
// are renewed from them.
// Rows say which instance an agent's WebSocket is open to: the others
// count it online while that instance lives, and offline as soon as it
// closes; so the last-seen time of such an agent is written only every 10
// heartbeats (that of one polling over plain HTTP every heartbeat, its
// lease for the others).
func (s *Server) registryOptions() registry.Options {
	if s.notifier == nil {
		return registry.Options{}
	}
	hb := min(30*time.Second, s.opts.heartbeat())
	return registry.Options{SeenInterval: hb, ConnectedSeenInterval: 10 * hb, Instance: s.notifier.ID()}
}

// startCluster starts applying the other instances' changes.
func (s *Server) startCluster(db store.Store) {
	pg, ok := db.(*postgres.DB)
	if !ok || s.notifier == nil {
		return
	}
	s.publisher.SetElsewhere(func(uid [16]byte) bool { return s.registry.Elsewhere(uid) })
	// Providers snapshots of updaters connected to other instances.
	s.registry.Observe(s.hosts.AgentChanged)
	hb := s.opts.heartbeat()
	log := s.log.With("component", "cluster")
	s.sync = cluster.NewSync(pg, s.registry, s.tokens, s.opamp, cluster.SyncOptions{
		Lease: 3 * hb, Sweep: hb, Log: log, Instance: s.notifier.ID(), Leader: s.leader, Revision: s.estateRevision,
		Configs: s.configs, Offers: s.offers, Deciders: []cluster.Decider{s.offers, s.configs}, Requests: s.requests,
		Notifier: s.notifier})
	s.notifier.Handle(s.sync.Handle)
	s.sync.Start()
	s.leader.Start(s.sync.LeaderChanged)
	s.admin.Handle("GET /api/v1/cluster", func(w http.ResponseWriter, _ *http.Request) {
		admin.WriteJSON(w, http.StatusOK, s.sync.Status())
	})
	s.log.Info("sharing the estate with the other instances on the store", "store", s.opts.storeName(), "instance", s.notifier.ID())
}

// estateRevision is the revision of the estate in force ("" without one).
func (s *Server) estateRevision() string {
	s.estateMu.Lock()
	defer s.estateMu.Unlock()
	if s.estate == nil {
		return ""
	}
	return s.estate.Revision
}

// closeStore stops listening, announces what was written last and closes the store.
func (s *Server) closeStore() error {
	if s.leader != nil {
		s.leader.Close()
	}
	if s.sync != nil {
		s.sync.Close()
	}
	if s.notifier != nil {
		s.notifier.Close()
	}
	return s.store.Close()
}

// storePool samples a PostgreSQL store's connection pool for the metrics
// (nil for another store).
func storePool(db store.Store) func() metrics.StorePool {
	pg, ok := db.(*postgres.DB)
	if !ok {
		return nil
	}
	return func() metrics.StorePool {
		st := pg.Pool().Stat()
		return metrics.StorePool{
			Acquired: st.AcquiredConns(), Idle: st.IdleConns(), Max: st.MaxConns(),
			Acquires: st.AcquireCount(), Waited: st.EmptyAcquireCount(), Wait: st.EmptyAcquireWaitTime(),
		}
	}
}

// clusterStats is what this instance did with the other instances'
// changes, for the metrics.
func (s *Server) clusterStats() metrics.Cluster {
	st := s.notifier.Stats()
	out := metrics.Cluster{Queued: st.Queued, Kinds: make(map[string]metrics.ClusterKind, len(st.Kinds))}
	for kind, k := range st.Kinds {
		out.Kinds[kind] = metrics.ClusterKind{Applied: k.Applied, Resyncs: k.Resyncs, Failed: k.Failed, Busy: k.Busy}
	}
	return out
}
