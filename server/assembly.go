package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/apispec"
	"github.com/myriarch/myriarch/server/artifacts"
	"github.com/myriarch/myriarch/server/audit"
	"github.com/myriarch/myriarch/server/backpressure"
	"github.com/myriarch/myriarch/server/cluster"
	"github.com/myriarch/myriarch/server/configs"
	"github.com/myriarch/myriarch/server/console"
	"github.com/myriarch/myriarch/server/credentials"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/hostcontext"
	"github.com/myriarch/myriarch/server/keyrings"
	"github.com/myriarch/myriarch/server/metrics"
	"github.com/myriarch/myriarch/server/offers"
	"github.com/myriarch/myriarch/server/opampsrv"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/rollout"
	"github.com/myriarch/myriarch/server/telemetry"
)

// components are the parts of the server in the order New starts them;
// Close stops them in reverse. The parts of a cluster (with a shared
// store) start and stop nothing for a store of one instance's own.
func (s *Server) components() []component {
	return []component{
		{name: "data directory", start: s.startDataDir},
		{name: "TLS", start: s.startTLS},
		{name: "admin token", start: s.startAdminToken},
		{name: "OIDC", start: s.startOIDC, stop: s.stopOIDC},
		{name: "store", start: s.startStore, stop: s.stopStore},
		{name: "cluster notifications", start: s.startNotifier, stop: s.stopNotifier},
		// The leader gives the lead up after the features wrote their last
		// decisions, which only the leader may write.
		{name: "cluster leader", start: s.startLeader, stop: s.stopLeader},
		{name: "audit trail", start: s.startAudit},
		{name: "tokens", start: s.startTokens},
		{name: "registry", start: s.startRegistry, stop: s.stopRegistry},
		{name: "metrics", start: s.startMetrics},
		{name: "OpAMP", start: s.startOpAMP, stop: s.stopOpAMP},
		{name: "admin API", start: s.startAdmin},
		{name: "notifications", start: s.startNotifications, stop: s.stopNotifications},
		{name: "estate", start: s.startEstate},
		{name: "offers", start: s.startOffers, stop: s.stopOffers},
		{name: "host contexts", start: s.startHosts, stop: s.stopHosts},
		{name: "configs", start: s.startConfigs, stop: s.stopConfigs},
		{name: "own telemetry", start: s.startTelemetry, stop: s.stopTelemetry},
		{name: "keyrings", start: s.startKeyrings, stop: s.stopKeyrings},
		{name: "console", start: s.startConsole, stop: s.stopConsole},
		{name: "estate watchers", start: s.startEstateWatchers},
		{name: "cluster sync", start: s.startSync, stop: s.stopSync},
		// Closed before the parts that agents' messages reach (as the
		// OpAMP server is when a later part fails to start).
		{name: "agent connections", start: func(context.Context) error { return nil }, stop: s.stopOpAMP},
	}
}

func (s *Server) startDataDir(context.Context) error { return prepareDataDir(s.opts.DataDir, s.log) }

func (s *Server) startTLS(context.Context) (err error) {
	s.tlsConfig, err = loadTLS(s.opts)
	return err
}

func (s *Server) startAdminToken(context.Context) (err error) {
	s.adminToken, err = adminToken(s.opts)
	return err
}

func (s *Server) startOIDC(context.Context) (err error) {
	s.oidc, err = s.newOIDC()
	return err
}

func (s *Server) stopOIDC(context.Context) error {
	if s.oidc != nil {
		s.oidc.Close()
	}
	return nil
}

func (s *Server) startStore(ctx context.Context) error {
	db, err := openStore(ctx, s.opts)
	if err != nil {
		return err
	}
	s.opened, s.store = db, db
	s.sharedDB, _ = db.(sharedStore)
	s.storeOpen.Store(true)
	return nil
}

func (s *Server) stopStore(context.Context) error {
	s.storeOpen.Store(false)
	return s.opened.Close()
}

func (s *Server) startAudit(context.Context) error {
	s.audit = audit.New(audit.Options{Store: s.store, Log: s.log.With("component", "audit")})
	return nil
}

func (s *Server) startTokens(ctx context.Context) (err error) {
	s.tokens, err = credentials.Open(ctx, s.store)
	return err
}

func (s *Server) startRegistry(ctx context.Context) (err error) {
	ro := s.registryOptions()
	ro.NewAgentsPerMinute, ro.PruneAfter = s.opts.RegistrationsPerMinute, s.opts.PruneAfter
	s.registry, err = registry.Load(ctx, s.store, s.tokens, s.log.With("component", "registry"), ro)
	return err
}

func (s *Server) stopRegistry(context.Context) error { return s.registry.Close() }

func (s *Server) startMetrics(context.Context) error {
	src := metrics.Sources{
		Connected: func() map[string]int {
			out := map[string]int{}
			for k, n := range s.registry.Counts() {
				out[string(k)] = n
			}
			return out
		},
		Agents:    metrics.RegistryAgents(s.registry),
		Offers:    s.offerStates,
		StorePool: s.storePool(),
		ConfigWarnings: func() map[string]int {
			if s.configs == nil {
				return nil
			}
			byKind, _ := s.configs.WarningCounts()
			return byKind
		},
		Ready: func() bool { return len(s.notReady()) == 0 },
		Configs: func() map[string]map[string]int {
			if s.configs == nil {
				return nil
			}
			return s.configs.SyncCountsByFleet()
		},
		Rollouts: metrics.Rollouts{
			"offers": func() []rollout.Gauge {
				if s.offers == nil {
					return nil
				}
				return s.offers.Gauges()
			},
			"configs": func() []rollout.Gauge {
				if s.configs == nil {
					return nil
				}
				return s.configs.Gauges()
			},
		},
		Offline: s.OfflineCounts,
		Telemetry: func() map[string]int {
			if s.telemetry == nil {
				return nil
			}
			return s.telemetry.StateCounts()
		},
		Keyring: func() map[string]int {
			if s.keyrings == nil {
				return nil
			}
			return s.keyrings.StateCounts()
		},
		Notifications: s.notificationMetrics(),
	}
	if s.notifier != nil {
		src.Cluster, src.ClusterKinds = s.clusterStats, cluster.Kinds()
	}
	s.metrics = metrics.New(src)
	return nil
}

func (s *Server) startOpAMP(context.Context) (err error) {
	admission := backpressure.New(backpressure.Options{Rate: admissionRate})
	s.opamp, err = opampsrv.New(s.registry, s.tokens, s.log.With("component", "opamp"),
		opampsrv.Metrics{Message: s.metrics.Message, Reject: s.metrics.Reject, Replaced: s.metrics.Replaced},
		opampsrv.Options{Heartbeat: s.opts.Heartbeat, Gate: func() (int, int) {
			if ok, wait := admission.Admit(); !ok {
				// Round up: a Retry-After of 0 would invite an immediate retry.
				return http.StatusServiceUnavailable, max(1, int((wait+time.Second-1)/time.Second))
			}
			return 0, 0
		}})
	if err != nil {
		return err
	}
	s.opampMux.Handle(opampsrv.Path, s.opamp.Handler())
	return nil
}

// stopOpAMP closes agent connections and the OpAMP server's poller (which
// runs from New on, whether or not the server was started), and waits for
// the OpAMP listener to stop serving. Closing again does nothing more.
func (s *Server) stopOpAMP(ctx context.Context) error {
	err := s.opamp.Close(ctx)
	s.opampServing.Wait()
	return err
}

func (s *Server) startAdmin(context.Context) error {
	s.accounts = s.newAccounts()
	spec, err := apispec.Load()
	if err != nil {
		return err
	}
	deps := admin.Deps{
		Keys:          s.accounts,
		FleetOfAgent:  s.fleetOfAgent,
		AdminToken:    s.adminToken,
		Tokens:        s.tokens,
		Registry:      s.registry,
		Disconnector:  s.opamp,
		Metrics:       s.metrics.Handler(),
		Ready:         s.notReady,
		Log:           s.log.With("component", "admin"),
		Audit:         s.appendAudit,
		Spec:          spec,
		CheckResponse: s.opts.CheckResponses,
	}
	if s.opts.Estate != "" {
		deps.ReloadEstate = s.reloadEstate
		deps.EstateStatus = s.EstateStatus
	}
	s.admin = admin.New(deps)
	mountProfiling(s.admin)
	s.accounts.Routes(s.admin)
	s.audit.Routes(s.admin)
	s.admin.Handle("POST /api/v1/estate/plan", s.planEstate)
	s.admin.Handle("POST /api/v1/backup", s.backup)
	s.artifacts = artifacts.New(s.tokens, offers.ArtifactPath)
	s.opampMux.Handle(offers.ArtifactPath, s.artifacts)
	return nil
}

// startEstate loads the estate, if one is configured, before the features
// that act on it start: they start with it in force, so the stored agents
// are evaluated once, against it.
func (s *Server) startEstate(context.Context) error {
	s.estateLoaded.Store(s.opts.Estate == "")
	if s.opts.Estate == "" {
		return nil
	}
	e, err := estate.Load(s.opts.Estate)
	if err != nil {
		return err
	}
	s.applyEstate(e)
	s.artifacts.SetEstate(e)
	return nil
}

func (s *Server) startOffers(ctx context.Context) (err error) {
	s.offers, err = offers.New(ctx, s.registry, s.store, s.opamp, s.log.With("component", "offers"),
		offers.Options{BaseURL: s.BaseURL, Estate: s.estate, Notice: s.notifyRollout, Shared: s.shared(), Requests: s.actionRequests()})
	if err != nil {
		return err
	}
	s.opamp.AddHook(s.offers)
	s.offers.Routes(s.admin)
	return nil
}

func (s *Server) stopOffers(context.Context) error {
	s.offers.Close()
	return nil
}

func (s *Server) startHosts(context.Context) error {
	s.hosts = hostcontext.New(s.registry, s.log.With("component", "hostcontext"))
	s.opamp.AddHook(s.hosts)
	return nil
}

func (s *Server) stopHosts(context.Context) error {
	s.hosts.Close()
	return nil
}

func (s *Server) startConfigs(ctx context.Context) (err error) {
	s.configs, err = configs.New(ctx, s.registry, s.store, s.opamp, s.log.With("component", "configs"),
		configs.Options{Estate: s.estate, Notice: s.notifyRollout, Host: hostLink{offers: s.offers, book: s.hosts}, Shared: s.shared(), Requests: s.actionRequests()})
	if err != nil {
		return err
	}
	// After the offers engine: the configuration extends its assignment.
	s.opamp.AddHook(s.configs)
	s.configs.Routes(s.admin)
	// A new link or a new snapshot re-renders the collector concerned.
	s.offers.OnLinkChange(s.configs.ContextChanged)
	s.hosts.OnChange(func(updater uuid.UUID) {
		if col, ok := s.offers.LinkedCollector(updater); ok {
			s.configs.ContextChanged(col)
			return
		}
		if !s.registry.Elsewhere(updater) { // said once, where the snapshot came in
			s.registry.AddEvent(updater, hostcontext.EventIgnored, "providers snapshot kept; no collector is linked to this updater, so no configuration reads it yet")
		}
	})
	s.offers.AddFleetExtension(s.configs)
	return nil
}

func (s *Server) stopConfigs(context.Context) error {
	s.configs.Close()
	return nil
}

// startTelemetry offers the fleets' own-telemetry destinations; its hook
// runs after the offers engine's, which links updaters to collectors.
func (s *Server) startTelemetry(context.Context) error {
	s.telemetry = telemetry.New(s.registry, s.offers, s.opamp, telemetry.Options{Log: s.log.With("component", "telemetry")})
	if s.estate != nil {
		s.telemetry.SetEstate(s.estate)
	}
	s.opamp.AddHook(s.telemetry)
	s.telemetry.Routes(s.admin)
	return nil
}

func (s *Server) stopTelemetry(context.Context) error {
	s.telemetry.Close()
	return nil
}

// startKeyrings offers the estate's signed keyring to the updaters.
func (s *Server) startKeyrings(context.Context) error {
	s.keyrings = keyrings.New(s.registry, s.opamp, keyrings.Options{Log: s.log.With("component", "keyrings")})
	if s.estate != nil {
		s.keyrings.SetEstate(s.estate)
	}
	s.opamp.AddHook(s.keyrings)
	s.keyrings.Routes(s.admin)
	return nil
}

func (s *Server) stopKeyrings(context.Context) error {
	s.keyrings.Close()
	return nil
}

// startConsole mounts the browser console at / of the admin listener; its
// hook runs after the features' hooks, so a refresh shows what they made
// of a message.
func (s *Server) startConsole(context.Context) error {
	s.console = console.New(console.Options{API: s.admin, AdminToken: s.adminToken, AgentCount: s.registry.Len,
		Store: s.store, Users: s.accounts, OIDC: s.oidc,
		Log: s.log.With("component", "console")})
	s.closeConsole = sync.OnceFunc(s.console.Close)
	s.console.Mount()
	s.registry.Watch(s.console.Changed)
	s.opamp.AddHook(s.console)
	return nil
}

func (s *Server) stopConsole(context.Context) error {
	s.closeConsole()
	return nil
}

// startEstateWatchers hands every estate loaded from now on to the parts
// that act on it.
func (s *Server) startEstateWatchers(context.Context) error {
	s.estateMu.Lock()
	defer s.estateMu.Unlock()
	s.onEstate = append(s.onEstate, func(e *estate.Estate) {
		s.artifacts.SetEstate(e)
		s.offers.SetEstate(e)
		s.configs.SetEstate(e)
		s.telemetry.SetEstate(e)
		s.keyrings.SetEstate(e)
		s.console.ChangedAll()
	})
	return nil
}
