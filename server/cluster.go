package server

import (
	"context"
	"net/http"
	"time"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/cluster"
	"github.com/myriarch/myriarch/server/metrics"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/postgres"
)

// With a store shared by several instances (store.Shared: PostgreSQL) the
// instance shares the estate with every other instance on it: what it
// writes is announced to them, and what they write is merged into its
// registry (server/cluster).

// sharedStore is a store several instances share: it carries their
// notifications and elects their leader (store.Shared), and reads what
// the others wrote (cluster.Source).
type sharedStore interface {
	store.Shared
	cluster.Source
}

var _ sharedStore = (*postgres.DB)(nil)

// heartbeat is the interval offered to agents.
func (o *Options) heartbeat() time.Duration {
	if o.Heartbeat > 0 {
		return o.Heartbeat
	}
	return 30 * time.Second
}

// startNotifier listens to the other instances from before the agents are
// loaded: what they change meanwhile waits in the notifier's queue (or
// becomes a resync). The parts use a store that announces their writes.
func (s *Server) startNotifier(context.Context) error {
	if s.sharedDB == nil {
		return nil
	}
	s.notifier = cluster.NewNotifier(s.sharedDB, s.log.With("component", "cluster"), cluster.NotifierOptions{})
	s.notifier.Start()
	s.publisher = cluster.Publishing(s.sharedDB, s.notifier)
	s.store = s.publisher
	return nil
}

func (s *Server) stopNotifier(context.Context) error {
	if s.notifier != nil {
		s.notifier.Close()
	}
	return nil
}

// startLeader prepares this instance's candidacy: only the leader writes
// decisions; it campaigns once everything is built (startSync).
func (s *Server) startLeader(context.Context) error {
	if s.sharedDB == nil {
		return nil
	}
	log := s.log.With("component", "cluster")
	s.leader = cluster.NewLeader(s.sharedDB, cluster.LeaderOptions{Log: log})
	s.requests = cluster.NewRequests(s.notifier, log, s.leader.Leading, func() {
		s.offers.Flush()
		s.configs.Flush()
	})
	return nil
}

func (s *Server) stopLeader(context.Context) error {
	if s.leader != nil {
		s.leader.Close()
	}
	return nil
}

// startSync starts applying the other instances' changes, and campaigns.
func (s *Server) startSync(context.Context) error {
	if s.sharedDB == nil {
		return nil
	}
	s.publisher.SetElsewhere(func(uid [16]byte) bool { return s.registry.Elsewhere(uid) })
	// Providers snapshots of updaters connected to other instances.
	s.registry.Observe(s.hosts.AgentChanged)
	hb := s.opts.heartbeat()
	s.sync = cluster.NewSync(s.sharedDB, s.registry, s.tokens, s.opamp, cluster.SyncOptions{
		Lease: 3 * hb, Sweep: hb, Log: s.log.With("component", "cluster"), Instance: s.notifier.ID(), Leader: s.leader,
		Revision: s.estateRevision, Configs: s.configs, Offers: s.offers, Deciders: []cluster.Decider{s.offers, s.configs},
		Requests: s.requests, Notifier: s.notifier})
	s.notifier.Handle(s.sync.Handle)
	s.sync.Start()
	s.leader.Start(s.sync.LeaderChanged)
	s.admin.Handle("GET /api/v1/cluster", func(w http.ResponseWriter, _ *http.Request) {
		admin.WriteJSON(w, http.StatusOK, s.sync.Status())
	})
	s.log.Info("sharing the estate with the other instances on the store", "store", s.opts.storeName(), "instance", s.notifier.ID())
	return nil
}

// stopSync stops applying the other instances' changes and tells them
// this instance stops.
func (s *Server) stopSync(context.Context) error {
	if s.sync != nil {
		s.sync.Close()
	}
	return nil
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

// estateRevision is the revision of the estate in force ("" without one).
func (s *Server) estateRevision() string {
	s.estateMu.Lock()
	defer s.estateMu.Unlock()
	if s.estate == nil {
		return ""
	}
	return s.estate.Revision
}

// storePool samples a shared store's connection pool for the metrics (nil
// for another store).
func (s *Server) storePool() func() metrics.StorePool {
	if s.sharedDB == nil {
		return nil
	}
	return func() metrics.StorePool {
		st := s.sharedDB.PoolStats()
		return metrics.StorePool{Acquired: st.Acquired, Idle: st.Idle, Max: st.Max, Acquires: st.Acquires, Waited: st.Waited, Wait: st.Wait}
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
