// Package updater is the myriarch-updater's OpAMP agent. It connects to the
// myriarch server with opamp-go, identifies itself (service.name
// myriarch-updater, its persisted instance UID, host attributes and the
// dev.myriarch.* attributes), pairs itself with its collector by reporting
// the supervisor's instance UID, reports its own health, and hands package
// offers to a PackageHandler.
//
// API for the rest of myriarch:
//
//	cfg, err := config.Load(path)            // or config.NewDefaultConfig() + fields
//	u, err := updater.New(cfg, log, opts...) // WithPackageHandler, WithStatePollInterval, …
//	err = u.Run(ctx)                         // blocks until ctx ends
//	d, err := updater.Describe(cfg)          // the JSON view `inspect` prints
//
// The version reported as service.version is internal/buildinfo.Version.
//
// Reconnection: opamp-go's clients retry failed connections with
// exponential backoff (500 ms growing to 60 s) with ±50 % random jitter, and
// honour a server's Retry-After; the updater keeps its state across
// reconnects and the server can ask for full state at any time. Run records
// whether it is connected in state_dir/connection.json (ReadConnection), so
// `myriarch-updater status` can tell without asking the running process.
package updater

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/hostinfo"
	"github.com/myriarch/myriarch/agent/identity"
	"github.com/myriarch/myriarch/agent/keyring"
	"github.com/myriarch/myriarch/agent/mode"
	"github.com/myriarch/myriarch/agent/modes"
	"github.com/myriarch/myriarch/agent/supervisor"
	"github.com/myriarch/myriarch/agent/supervisorstate"
	"github.com/myriarch/myriarch/internal/buildinfo"
)

// Option adjusts an Updater.
type Option func(*options)

type options struct {
	handler           PackageHandler
	statePollInterval time.Duration
	lookupInterval    time.Duration
	heartbeat         *time.Duration
	runtime           mode.Runtime
	own               OwnTelemetry
	providersObserver ProvidersObserver
	keyring           *keyring.Ring
}

// WithPackageHandler plugs in the engine that handles package offers. Without
// one, every offered package is refused with InstallFailed
// "package installation not enabled".
func WithPackageHandler(h PackageHandler) Option {
	return func(o *options) {
		if h != nil {
			o.handler = h
		}
	}
}

// WithLookupInterval sets how often a mode that looks up which collector
// version runs (mode.RunningLooker; container mode: the image) looks again
// (default 1 min).
func WithLookupInterval(d time.Duration) Option {
	return func(o *options) { o.lookupInterval = d }
}

// WithStatePollInterval sets how often persistent_state.yaml is checked
// (default supervisorstate.DefaultInterval).
func WithStatePollInterval(d time.Duration) Option {
	return func(o *options) { o.statePollInterval = d }
}

// WithHeartbeatInterval sets the OpAMP heartbeat (and, for http(s)
// endpoints, polling) interval; opamp-go's default is 30 s.
func WithHeartbeatInterval(d time.Duration) Option { return func(o *options) { o.heartbeat = &d } }

// WithRuntime gives the collector mode's Runtime, when the caller built it
// already (to share its supervisor controller with the install engine);
// without it New builds the one cfg's mode names (agent/modes).
func WithRuntime(rt mode.Runtime) Option {
	return func(o *options) { o.runtime = rt }
}

// Updater is the running OpAMP agent. Create it with New, then call Run once.
type Updater struct {
	cfg  *config.Config
	log  *slog.Logger
	uid  uuid.UUID
	opts options

	client     client.OpAMPClient
	serverURL  string
	scheme     string // of server.endpoint
	runtime    mode.Runtime
	supervisor supervisor.Controller // the runtime's; nil when the mode has none
	pkgState   *packagesState
	health     *health

	mu        sync.Mutex
	facts     facts // guarded by mu
	desc      *protobufs.AgentDescription
	running   bool
	runCtx    context.Context
	stateSeen bool // persistent_state.yaml has been looked at once
}

// New prepares an updater for cfg: it validates cfg, loads (or creates) the
// persisted instance UID and builds the OpAMP client. It does not connect.
func New(cfg *config.Config, log *slog.Logger, opts ...Option) (*Updater, error) {
	if cfg == nil {
		return nil, errors.New("updater: nil config")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("updater: invalid config: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := options{handler: refusingHandler{}}
	for _, opt := range opts {
		opt(&o)
	}
	uid, err := identity.LoadOrCreate(cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("updater: %w", err)
	}
	u := &Updater{
		cfg:       cfg,
		log:       log,
		uid:       uid,
		opts:      o,
		serverURL: cfg.Server.Endpoint,
		pkgState:  &packagesState{handler: o.handler},
		health:    newHealth(time.Now()),
	}
	ep, err := url.Parse(cfg.Server.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("updater: server.endpoint: %w", err)
	}
	logger := opampLogger{log: log}
	switch ep.Scheme {
	case "ws", "wss":
		u.client = client.NewWebSocket(logger)
	default:
		u.client = client.NewHTTP(logger)
	}
	u.scheme = ep.Scheme
	u.runtime = o.runtime
	if u.runtime == nil {
		if u.runtime, err = modes.For(cfg, log); err != nil {
			return nil, fmt.Errorf("updater: %w", err)
		}
	}
	u.supervisor = u.runtime.Supervisor()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	host, err := hostinfo.Get(ctx)
	if err != nil {
		log.Warn("incomplete host information", "err", err)
	}
	u.facts.host = host
	if o.keyring != nil {
		u.facts.keyring = o.keyring.Attributes()
	}
	return u, nil
}

// InstanceUID is the updater's persisted OpAMP instance UID.
func (u *Updater) InstanceUID() uuid.UUID { return u.uid }

// Supervisor is the controller for the upstream supervisor (nil when the
// collector mode has none).
func (u *Updater) Supervisor() supervisor.Controller { return u.supervisor }

// Description returns the AgentDescription as currently reported.
func (u *Updater) Description() *Description {
	u.mu.Lock()
	defer u.mu.Unlock()
	return descriptionView(u.uid, buildDescription(u.cfg, u.runtime, u.uid, u.facts))
}

// Health returns the health as currently reported.
func (u *Updater) Health() *protobufs.ComponentHealth { return u.health.proto() }

// Run connects to the server and keeps the updater reporting until ctx ends;
// it reconnects on its own. It also runs the supervisor when
// supervisor.control is "process". It returns nil after a clean shutdown and
// an error only when it cannot start. Run may be called once.
func (u *Updater) Run(ctx context.Context) error {
	u.mu.Lock()
	if u.running {
		u.mu.Unlock()
		return errors.New("updater: Run called twice")
	}
	u.running, u.runCtx = true, ctx
	u.mu.Unlock()

	// First look at the supervisor state before connecting, so the first
	// report already carries the pairing attribute when it is known.
	u.onSupervisorState(supervisorstate.Read(u.cfg.Supervisor.StorageDir))
	looker, looks := u.runtime.(mode.RunningLooker)
	if looks {
		u.lookUpRunning(ctx, looker)
	}

	u.mu.Lock()
	u.desc = buildDescription(u.cfg, u.runtime, u.uid, u.facts)
	err := u.client.SetAgentDescription(u.desc)
	u.mu.Unlock()
	if err != nil {
		return fmt.Errorf("updater: %w", err)
	}
	if err := u.client.SetHealth(u.health.proto()); err != nil {
		return fmt.Errorf("updater: %w", err)
	}
	tc, err := tlsConfig(u.cfg.Server, u.scheme)
	if err != nil {
		return fmt.Errorf("updater: %w", err)
	}
	conn := newConnectionRecord(u.cfg.StateDir, publicEndpoint(u.serverURL), u.scheme == "ws" || u.scheme == "wss", u.log)
	hp := u.newHostProviders()
	if caps := u.customCapabilities(hp); len(caps) > 0 {
		if err := u.client.SetCustomCapabilities(&protobufs.CustomCapabilities{Capabilities: caps}); err != nil {
			return fmt.Errorf("updater: %w", err)
		}
	}
	settings := types.StartSettings{
		OpAMPServerURL:        u.serverURL,
		Header:                http.Header{"User-Agent": {ServiceName + "/" + buildinfo.Version}},
		HeaderFunc:            u.authorize,
		TLSConfig:             tc,
		InstanceUid:           types.InstanceUid(u.uid),
		PackagesStateProvider: u.pkgState,
		// Through StartSettings because opamp-go's SetCapabilities refuses
		// AcceptsPackages until Start has registered the PackagesStateProvider;
		// here both are validated together, atomically, before the first message.
		Capabilities:      u.capabilities(), //nolint:staticcheck // see above
		HeartbeatInterval: u.opts.heartbeat,
		Callbacks: types.Callbacks{
			OnConnect: func(context.Context) {
				conn.connected()
				hp.connected()
				u.log.Info("connected to server", "endpoint", u.serverURL)
			},
			OnConnectFailed: func(_ context.Context, err error) {
				conn.failed(err)
				u.log.Debug("connection to server failed, retrying with backoff", "endpoint", u.serverURL, "err", err)
			},
			OnError: func(_ context.Context, e *protobufs.ServerErrorResponse) {
				u.log.Warn("server reported an error", "type", e.GetType().String(), "message", e.GetErrorMessage())
			},
			OnMessage: u.onMessage,
		},
	}
	if err := u.client.Start(ctx, settings); err != nil {
		return fmt.Errorf("updater: start OpAMP client: %w", err)
	}
	u.log.Info("updater started", "instance_uid", u.uid.String(), "endpoint", u.serverURL, "mode", u.cfg.Mode)

	var wg sync.WaitGroup
	hp.start(ctx, &wg)
	wg.Go(func() {
		supervisorstate.Watch(ctx, u.cfg.Supervisor.StorageDir, u.opts.statePollInterval, u.onSupervisorState)
	})
	if looks {
		wg.Go(func() { u.pollRunning(ctx, looker) })
	}
	if p, ok := u.supervisor.(childProcess); ok {
		wg.Go(func() { u.superviseChild(ctx, p) })
	}

	<-ctx.Done()
	wg.Wait()
	if p, ok := u.supervisor.(childProcess); ok {
		stopCtx, cancel := context.WithTimeout(context.Background(), supervisor.DefaultTimeout)
		if err := p.Stop(stopCtx); err != nil {
			u.log.Error("stopping supervisor", "err", err)
		}
		cancel()
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := u.client.Stop(stopCtx); err != nil {
		u.log.Warn("stopping OpAMP client", "err", err)
	}
	conn.stopped()
	u.log.Info("updater stopped")
	return nil
}

// authorize adds the bearer token to every connection attempt; the token
// file is re-read each time so a rotated token is picked up.
func (u *Updater) authorize(h http.Header) http.Header {
	tok, err := u.cfg.Server.BearerToken()
	if u.health.set(componentCredentials, err) {
		u.pushHealth()
	}
	if err != nil {
		u.log.Error("cannot read server token", "err", err)
		return h
	}
	if tok != "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	return h
}

func (u *Updater) onMessage(_ context.Context, msg *types.MessageData) {
	u.applyOwnTelemetry(msg)
	u.applyKeyring(msg)
	if msg.PackagesAvailable != nil {
		u.mu.Lock()
		ctx := u.runCtx
		u.mu.Unlock()
		u.opts.handler.HandlePackages(ctx, msg.PackagesAvailable, u.reportPackages)
	}
	if msg.AgentIdentification != nil {
		// The updater's UID is bound to its credential on the server; it is
		// never replaced remotely.
		u.log.Warn("server proposed a new instance UID; keeping the persisted one",
			"proposed", fmt.Sprintf("%x", msg.AgentIdentification.GetNewInstanceUid()))
	}
}

func (u *Updater) reportPackages(st *protobufs.PackageStatuses) error {
	if st == nil {
		return errors.New("updater: nil package statuses")
	}
	if u.log.Enabled(context.Background(), slog.LevelDebug) {
		for name, p := range st.GetPackages() {
			u.log.Debug("reporting package status", "package", name, "version", p.GetServerOfferedVersion(),
				"status", p.GetStatus().String(), "error", p.GetErrorMessage(), "all_packages_hash", fmt.Sprintf("%x", st.GetServerProvidedAllPackagesHash()))
		}
	}
	if err := u.client.SetPackageStatuses(st); err != nil {
		return fmt.Errorf("updater: report package statuses: %w", err)
	}
	return u.pkgState.SetLastReportedStatuses(st)
}

// onSupervisorState applies a new reading of persistent_state.yaml.
func (u *Updater) onSupervisorState(st supervisorstate.State, err error) {
	var problem error
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		problem = err
	}
	u.mu.Lock()
	seen := u.stateSeen
	u.stateSeen = true
	u.mu.Unlock()
	u.updateFacts(func(f *facts) { f.collectorUID = st.InstanceID })
	changed := u.health.set(componentSupervisorState, problem)
	if changed {
		u.pushHealth()
	}
	switch {
	case problem != nil && changed:
		u.log.Error("cannot read supervisor state; retrying", "err", err)
	case err != nil && problem == nil && !seen:
		u.log.Info("supervisor state not there yet; collector instance UID unknown", "path", supervisorstate.Path(u.cfg.Supervisor.StorageDir))
	case problem == nil && changed && seen:
		u.log.Info("supervisor state readable again")
	}
}

// updateFacts applies change and re-reports the description if it changed.
func (u *Updater) updateFacts(change func(*facts)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	old := u.facts
	change(&u.facts)
	if u.facts.equal(old) || u.desc == nil {
		return
	}
	if u.facts.collectorUID != old.collectorUID {
		u.log.Info("collector instance UID changed", "old", old.collectorUID, "new", u.facts.collectorUID)
	}
	d := buildDescription(u.cfg, u.runtime, u.uid, u.facts)
	if proto.Equal(d, u.desc) {
		return
	}
	u.desc = d
	if err := u.client.SetAgentDescription(d); err != nil {
		u.log.Error("report description", "err", err)
	}
}

func (u *Updater) pushHealth() {
	u.mu.Lock()
	started := u.desc != nil
	u.mu.Unlock()
	if !started {
		return // Run sets the initial health before connecting
	}
	if err := u.client.SetHealth(u.health.proto()); err != nil {
		u.log.Error("report health", "err", err)
	}
}

// lookUpRunning asks the mode which collector version runs and reports
// it; a failure is reported as unhealthy and keeps the last look's
// attributes.
func (u *Updater) lookUpRunning(ctx context.Context, l mode.RunningLooker) {
	running, err := l.LookupRunning(ctx)
	if ctx.Err() != nil {
		return
	}
	if u.health.set(l.Component(), err) {
		u.pushHealth()
		if err != nil {
			u.log.Error("cannot look up which collector version runs", "err", err)
		}
	}
	if err == nil {
		u.updateFacts(func(f *facts) { f.running = running })
	}
}

func (u *Updater) pollRunning(ctx context.Context, l mode.RunningLooker) {
	interval := u.opts.lookupInterval
	if interval <= 0 {
		interval = time.Minute
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			u.lookUpRunning(ctx, l)
		}
	}
}
