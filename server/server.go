// Package server assembles myriarchd: the store, the token book, the agent
// registry, the OpAMP endpoint, the estate and the admin API, with their
// listeners and an orderly shutdown.
package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/blueprint"
	"github.com/myriarch/myriarch/server/accounts"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/artifacts"
	"github.com/myriarch/myriarch/server/audit"
	"github.com/myriarch/myriarch/server/cluster"
	"github.com/myriarch/myriarch/server/configs"
	"github.com/myriarch/myriarch/server/console"
	"github.com/myriarch/myriarch/server/credentials"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/hostcontext"
	"github.com/myriarch/myriarch/server/keyrings"
	"github.com/myriarch/myriarch/server/metrics"
	"github.com/myriarch/myriarch/server/notify"
	"github.com/myriarch/myriarch/server/offers"
	"github.com/myriarch/myriarch/server/oidclogin"
	"github.com/myriarch/myriarch/server/opampsrv"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/telemetry"
)

// admissionRate bounds new agent WebSocket connections per second (with a
// burst of as many), so a reconnect storm after a restart is spread out
// with 503 + Retry-After instead of registering every agent at once.
// See BENCHMARKS.md (load test) for how it was chosen.
const admissionRate = 1000

// Options are myriarchd serve's flags.
type Options struct {
	DataDir string
	// Store is where state is kept: StoreSQLite (or "") for a file in
	// DataDir, or a postgres:// URL, shared by several instances.
	Store       string
	Listen      string // OpAMP (and artifacts)
	AdminListen string
	Estate      string // optional estate directory
	// EstatePoll, when positive, reloads the estate whenever its revision
	// changes, checked at this interval.
	EstatePoll     time.Duration
	TLSCert        string
	TLSKey         string
	ClientCA       string
	AdminTokenFile string
	// PublicURL is the base URL agents reach the OpAMP listener at, for
	// artifact download URLs (default: derived from the bound address).
	PublicURL string
	Heartbeat time.Duration
	// InsecureListen allows plain-text OpAMP on an address that is not
	// loopback (e.g. behind a TLS-terminating proxy).
	InsecureListen bool
	Log            *slog.Logger

	// RegistrationsPerMinute bounds the new agents one credential may
	// register per minute; 0 is no bound.
	RegistrationsPerMinute int
	// PruneAfter forgets agents offline for longer; 0 keeps them.
	PruneAfter time.Duration
	// AuditRetention cuts audit records older than this, at start and
	// then hourly; 0 keeps them forever.
	AuditRetention time.Duration

	// NotificationWindow is how long occurrences of an event of a fleet
	// are gathered into one webhook body (default 30 s).
	NotificationWindow time.Duration

	// OIDC signs console operators in with an OpenID Connect provider
	// (none without an issuer).
	OIDC oidclogin.Settings

	// CheckResponses, when set, is told of each admin API answer that
	// does not match the API document (api/openapi.yaml); tests set it.
	CheckResponses func(pattern string, err error)

	// startHook, set by tests, is called before each component starts; an
	// error fails that start.
	startHook func(component string) error
	// notifyBackoff, set by tests, replaces the webhook retries' backoff.
	notifyBackoff func(n int) time.Duration
}

// Validate reports every problem with the options.
func (o *Options) Validate() error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir is required"))
	}
	if err := o.storeProblem(); err != nil {
		errs = append(errs, err)
	}
	if o.Listen == "" {
		errs = append(errs, errors.New("--listen is required"))
	}
	if o.AdminListen == "" {
		errs = append(errs, errors.New("--admin-listen is required"))
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key go together"))
	}
	if o.ClientCA != "" && o.TLSCert == "" {
		errs = append(errs, errors.New("--client-ca needs --tls-cert and --tls-key"))
	}
	if o.EstatePoll < 0 {
		errs = append(errs, fmt.Errorf("--estate-poll must not be negative, got %s", o.EstatePoll))
	}
	if o.EstatePoll > 0 && o.Estate == "" {
		errs = append(errs, errors.New("--estate-poll needs --estate"))
	}
	if o.Heartbeat < 0 {
		errs = append(errs, fmt.Errorf("--heartbeat must not be negative, got %s", o.Heartbeat))
	}
	if o.RegistrationsPerMinute < 0 {
		errs = append(errs, fmt.Errorf("--registrations-per-minute must not be negative, got %d", o.RegistrationsPerMinute))
	}
	if o.PruneAfter < 0 {
		errs = append(errs, fmt.Errorf("--prune-after must not be negative, got %s", o.PruneAfter))
	}
	if o.NotificationWindow < 0 {
		errs = append(errs, fmt.Errorf("--notification-window must not be negative, got %s", o.NotificationWindow))
	}
	if o.AuditRetention < 0 {
		errs = append(errs, fmt.Errorf("--audit-retention must not be negative, got %s", o.AuditRetention))
	}
	if o.Listen != "" && o.plainPublic() && !o.InsecureListen {
		errs = append(errs, fmt.Errorf("--listen %s is not a loopback address and no TLS is configured: "+
			"agents' enrollment tokens would cross the network in clear text; "+
			"configure --tls-cert and --tls-key, or pass --insecure-listen if TLS ends in front of myriarchd", o.Listen))
	}
	if err := o.OIDC.Validate(o.AdminListen); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// plainPublic reports whether OpAMP would be served without TLS on an
// address other hosts can reach.
func (o *Options) plainPublic() bool {
	return o.TLSCert == "" && !isLoopback(o.Listen)
}

// isLoopback reports whether a listen address only accepts connections
// from this host: 127.0.0.0/8, ::1 or localhost. An empty host (":4320")
// or an unspecified address (0.0.0.0, ::) listens on every interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	host, _, _ = strings.Cut(host, "%") // zone, as in fe80::1%eth0
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Server is a running myriarchd.
type Server struct {
	opts  Options
	log   *slog.Logger
	parts parts
	// opened is the store as opened, sharedDB the same when several
	// instances share it (else nil), and store what the parts write to
	// (with a shared store, one that announces their writes).
	opened     store.Store
	sharedDB   sharedStore
	store      store.Store
	tokens     *credentials.Book
	registry   *registry.Registry
	opamp      *opampsrv.Server
	admin      *admin.API
	metrics    *metrics.Metrics
	adminToken string
	tlsConfig  *tls.Config
	opampMux   *http.ServeMux

	planning chan struct{} // holds one token while a plan is made

	estateMu sync.Mutex
	estate   *estate.Estate // guarded by estateMu
	bg       backgroundReload
	onEstate []func(*estate.Estate)
	// estateErr is the last reload's error (nil after a good one), and
	// triedRev the revision it tried; guarded by estateMu.
	estateErr error
	triedRev  string
	// reloadMu serialises loads, so two reloads never apply out of order.
	reloadMu sync.Mutex
	stop     chan struct{}
	stopOnce sync.Once

	opampLn, adminLn net.Listener
	adminHTTP        *http.Server
	wg               sync.WaitGroup // the admin listener's and the estate poll's goroutines
	opampServing     sync.WaitGroup // the OpAMP listener's goroutine
	closeConsole     func()         // ends the console's live streams, once

	// What /readyz reports on.
	storeOpen, estateLoaded, opampUp, adminUp, closing atomic.Bool

	offers    *offers.Engine
	hosts     *hostcontext.Book
	configs   *configs.Engine
	telemetry *telemetry.Engine
	keyrings  *keyrings.Engine
	artifacts *artifacts.Handler
	console   *console.Console
	accounts  *accounts.Service
	audit     *audit.Trail
	retention *audit.Retention // nil unless started with an audit retention
	oidc      *oidclogin.RP    // nil without a provider

	notify *notifications

	notifier  *cluster.Notifier // nil without a PostgreSQL store
	publisher *cluster.Publisher
	sync      *cluster.Sync
	leader    *cluster.Leader
	requests  *cluster.Requests
}

// New opens the data directory and builds every part (components), without
// listening yet. When a part fails, those already built are closed again.
func New(ctx context.Context, opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.plainPublic() {
		opts.Log.Warn("OpAMP is served without TLS on an address other hosts can reach (--insecure-listen)", "listen", opts.Listen)
	}
	if !isLoopback(opts.AdminListen) {
		opts.Log.Warn("the admin API and console are served without TLS on an address other hosts can reach: "+
			"the admin token and console sessions cross the network in clear text; keep --admin-listen on loopback "+
			"or end TLS in front of it", "admin_listen", opts.AdminListen)
	}
	s := &Server{opts: opts, log: opts.Log, opampMux: http.NewServeMux(), stop: make(chan struct{}), planning: make(chan struct{}, 1)}
	if err := s.parts.start(ctx, s.components(), opts.startHook); err != nil {
		return nil, err
	}
	return s, nil
}

// BaseURL is the absolute base URL of the OpAMP listener.
func (s *Server) BaseURL() string {
	if s.opts.PublicURL != "" {
		return strings.TrimRight(s.opts.PublicURL, "/")
	}
	scheme := "http"
	if s.tlsConfig != nil {
		scheme = "https"
	}
	if s.opampLn == nil {
		return scheme + "://" + s.opts.Listen
	}
	return scheme + "://" + s.opampLn.Addr().String()
}

// Offers exposes the offer engine.
func (s *Server) Offers() *offers.Engine { return s.offers }

// HostContexts exposes the updaters' providers snapshots.
func (s *Server) HostContexts() *hostcontext.Book { return s.hosts }

// Configs exposes the configuration engine.
func (s *Server) Configs() *configs.Engine { return s.configs }

// Registry, Admin, Console, OpAMP, Store and Tokens expose the parts for features layered on top.
func (s *Server) Registry() *registry.Registry { return s.registry }
func (s *Server) Admin() *admin.API            { return s.admin }
func (s *Server) Console() *console.Console    { return s.console }
func (s *Server) OpAMP() *opampsrv.Server      { return s.opamp }
func (s *Server) Store() store.Store           { return s.store }
func (s *Server) Tokens() *credentials.Book    { return s.tokens }

// Audit is the audit trail, which every state-changing or refused
// request is written to.
func (s *Server) Audit() *audit.Trail { return s.audit }

// HandleOpAMPListener adds a route to the OpAMP listener (e.g. /artifacts/).
func (s *Server) HandleOpAMPListener(pattern string, h http.Handler) { s.opampMux.Handle(pattern, h) }

// OnEstate registers fn to receive every successfully loaded estate, starting with the current one.
func (s *Server) OnEstate(fn func(*estate.Estate)) {
	s.estateMu.Lock()
	defer s.estateMu.Unlock()
	s.onEstate = append(s.onEstate, fn)
	if s.estate != nil {
		fn(s.estate)
	}
}

// ReloadEstate re-reads the estate; on error the previous estate stays in
// force and the error is shown at GET /api/v1/estate.
func (s *Server) ReloadEstate() error {
	_, err := s.reloadEstate()
	return err
}

// reloadEstate is ReloadEstate that also says what it loaded or tried to:
// the revision, and the author of a Git estate's commit.
func (s *Server) reloadEstate() (string, error) {
	if s.opts.Estate == "" {
		return "", errors.New("no estate configured")
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	e, err := loadEstate(s.opts.Estate)
	if err != nil {
		// The revision the load read, not the one there now: a file
		// written during a failed load is a revision not yet tried.
		var le *estate.LoadError
		rev := ""
		if errors.As(err, &le) {
			rev = le.Revision
		} else {
			rev, _ = estate.Revision(s.opts.Estate)
		}
		s.estateMu.Lock()
		s.estateErr, s.triedRev = err, rev
		s.estateMu.Unlock()
		s.log.Error("estate reload failed; keeping the previous estate", "revision", rev, "err", err)
		if s.leads() { // every instance reads the same estate: the leader says it
			s.notify.Add(notify.Occurrence{Event: estate.EventEstateReloadFailed,
				Message: revisionText(rev, estate.CommitAuthor(s.opts.Estate, rev)) + ": " + err.Error()})
		}
		return revisionText(rev, estate.CommitAuthor(s.opts.Estate, rev)), err
	}
	s.applyEstate(e)
	s.log.Info("estate reloaded", "dir", s.opts.Estate, "revision", e.Revision, "author", e.Author, "inventory", len(e.Inventory), "fleets", len(e.Fleets),
		"findings", len(e.Findings))
	for i, f := range e.Findings {
		if i == 20 {
			s.log.Warn("more estate findings", "count", len(e.Findings)-20)
			break
		}
		s.log.Warn("estate finding", "kind", f.Kind, "blueprint", f.Blueprint, "lane", f.Lane, "owner", f.Owner, "message", f.Message)
	}
	return revisionText(e.Revision, e.Author), nil
}

// revisionText names a revision for the audit trail: a Git commit with its
// author, or the digest of the estate's files.
func revisionText(rev, author string) string {
	switch {
	case rev == "":
		return "revision unknown"
	case author != "":
		return "revision " + rev + " (commit by " + author + ")"
	}
	return "revision " + rev
}

// EstateStatus is GET /api/v1/estate: the revision in force, when it was
// loaded, and the problems of the last reload when it failed.
type EstateStatus struct {
	Revision *string          `json:"revision"`
	LoadedAt *time.Time       `json:"loadedAt"`
	Errors   []estate.Problem `json:"errors"`
	// Findings are the Blueprints' findings (blueprint-check's), which
	// never block a load.
	Findings []blueprint.Finding `json:"findings"`
	// Cluster, with a PostgreSQL store: the leader and whether this
	// instance runs the leader's estate revision.
	Cluster *cluster.Status `json:"cluster,omitempty"`
}

// EstateStatus reports the estate in force.
func (s *Server) EstateStatus() any {
	s.estateMu.Lock()
	defer s.estateMu.Unlock()
	out := EstateStatus{Errors: []estate.Problem{}, Findings: []blueprint.Finding{}}
	if s.sync != nil {
		st := s.sync.Status()
		out.Cluster = &st
	}
	if e := s.estate; e != nil {
		rev, at := e.Revision, e.LoadedAt
		out.Revision, out.LoadedAt = &rev, &at
		if e.Findings != nil {
			out.Findings = e.Findings
		}
	}
	var le *estate.LoadError
	switch {
	case errors.As(s.estateErr, &le):
		out.Errors = le.Problems
	case s.estateErr != nil:
		out.Errors = []estate.Problem{{File: s.opts.Estate, Message: s.estateErr.Error()}}
	}
	return out
}

// pollEstate reloads the estate whenever its revision changes (and is not
// the revision whose load failed last), until Close.
func (s *Server) pollEstate() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.EstatePoll)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		rev, err := estate.Revision(s.opts.Estate)
		if err != nil {
			s.log.Warn("estate revision unreadable", "dir", s.opts.Estate, "err", err)
			continue
		}
		s.estateMu.Lock()
		current := s.estate != nil && s.estate.Revision == rev
		tried := s.triedRev == rev
		s.estateMu.Unlock()
		if !current && !tried {
			s.log.Info("estate revision changed; reloading", "revision", rev)
			s.reloadInBackground("estate-poll")
		}
	}
}

func (s *Server) applyEstate(e *estate.Estate) {
	s.estateMu.Lock()
	defer s.estateMu.Unlock()
	if s.closing.Load() {
		return // a reload that ended during shutdown: the parts are closing
	}
	s.estate = e
	s.estateErr, s.triedRev = nil, ""
	s.estateLoaded.Store(true)
	s.notify.SetWebhooks(e.Webhooks)
	inv := registry.Inventory{ByUID: map[uuid.UUID]map[string]string{}, ByToken: map[string]map[string]string{}}
	for _, it := range e.Inventory {
		if it.Token != "" {
			inv.ByToken[it.Token] = it.Labels
		} else {
			inv.ByUID[it.InstanceUID] = it.Labels
		}
	}
	s.registry.SetInventory(inv)
	for _, fn := range s.onEstate {
		fn(e)
	}
}

// Start listens on both addresses and serves in the background.
func (s *Server) Start() error {
	var err error
	if s.opampLn, err = net.Listen("tcp", s.opts.Listen); err != nil {
		return fmt.Errorf("listen %s: %w", s.opts.Listen, err)
	}
	if s.adminLn, err = net.Listen("tcp", s.opts.AdminListen); err != nil {
		s.opampLn.Close()
		s.opampLn, s.adminLn = nil, nil // not started: Close has no listener to shut down
		return fmt.Errorf("admin listen %s: %w", s.opts.AdminListen, err)
	}
	s.adminHTTP = &http.Server{Handler: s.admin, ReadHeaderTimeout: 10 * time.Second}
	// Bound listeners queue connections until they are served: both are up.
	s.opampUp.Store(true)
	s.adminUp.Store(true)
	if s.opts.EstatePoll > 0 {
		s.wg.Add(1)
		go s.pollEstate()
	}
	if s.opts.AuditRetention > 0 {
		s.log.Info("audit records older than the retention are cut now and hourly", "audit_retention", s.opts.AuditRetention)
		s.retention = s.audit.Retain(s.opts.AuditRetention, audit.RetentionInterval)
	}
	if s.oidc != nil { // sign-in with the provider waits for it, nothing else does
		s.oidc.Start()
	}
	s.parts.add(component{name: "listeners", stop: s.stopServing})
	s.opampServing.Add(1)
	s.wg.Add(1)
	go func() {
		defer s.opampServing.Done()
		defer s.opampUp.Store(false)
		if err := s.opamp.Serve(s.opampLn, s.opampMux, s.tlsConfig); err != nil {
			s.log.Error("opamp listener stopped", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		defer s.adminUp.Store(false)
		if err := s.adminHTTP.Serve(s.adminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("admin listener stopped", "err", err)
		}
	}()
	s.log.Info("myriarchd serving", "opamp", s.OpAMPURL(), "admin", "http://"+s.adminLn.Addr().String())
	return nil
}

// OpAMPAddr and AdminAddr are the bound addresses (after Start).
func (s *Server) OpAMPAddr() net.Addr { return s.opampLn.Addr() }
func (s *Server) AdminAddr() net.Addr { return s.adminLn.Addr() }

// OpAMPURL is the WebSocket URL agents use.
func (s *Server) OpAMPURL() string {
	scheme := "ws"
	if s.tlsConfig != nil {
		scheme = "wss"
	}
	return scheme + "://" + s.opampLn.Addr().String() + opampsrv.Path
}

// AdminToken is the bearer token of the admin API.
func (s *Server) AdminToken() string { return s.adminToken }

// Close shuts down: no new connections, agent connections closed, pending
// state flushed, every part stopped in the reverse of the order it started,
// the store last. It honours ctx for in-flight requests.
func (s *Server) Close(ctx context.Context) error {
	s.closing.Store(true)
	s.estateMu.Lock() // an estate being applied is applied before the parts close
	s.estateMu.Unlock()
	s.stopOnce.Do(func() { close(s.stop) })
	return s.parts.stop(ctx)
}

// stopServing stops what Start started but the OpAMP listener, which
// stops with the OpAMP server: the admin listener, once the console's live
// streams (which would hold its shutdown) have ended; the estate poll; the
// audit retention.
func (s *Server) stopServing(ctx context.Context) error {
	s.closeConsole()
	if s.retention != nil {
		s.retention.Close()
	}
	err := s.adminHTTP.Shutdown(ctx)
	s.wg.Wait()
	return err
}

// offerStates counts collectors by offer state for the metrics.
func (s *Server) offerStates() map[string]int {
	if s.offers == nil {
		return nil
	}
	return s.offers.StateCounts()
}

// notReady names what keeps the server from serving agents and operators
// (nothing once the store is open, the estate loaded and both listeners up).
func (s *Server) notReady() []string {
	var out []string
	if s.closing.Load() {
		out = append(out, "shutting down")
	}
	if !s.storeOpen.Load() {
		out = append(out, "store not open")
	}
	if !s.estateLoaded.Load() {
		out = append(out, "estate not loaded")
	}
	if !s.opampUp.Load() {
		out = append(out, "OpAMP listener not serving")
	}
	if !s.adminUp.Load() {
		out = append(out, "admin listener not serving")
	}
	return out
}

// Run serves until ctx ends, then shuts down within a few seconds.
func Run(ctx context.Context, opts Options, reload <-chan struct{}) error {
	s, err := New(ctx, opts)
	if err != nil {
		return err
	}
	if err := s.Start(); err != nil {
		s.Close(context.Background())
		return err
	}
	for {
		select {
		case <-reload:
			s.reloadInBackground("signal:SIGHUP")
			continue
		case <-ctx.Done():
		}
		break
	}
	s.log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.Close(sctx)
}

func loadTLS(opts Options) (*tls.Config, error) {
	if opts.TLSCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(opts.TLSCert, opts.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if opts.ClientCA != "" {
		pem, err := os.ReadFile(opts.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("--client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--client-ca %s: no PEM certificates", opts.ClientCA)
		}
		cfg.ClientCAs = pool
		// Agents may still authenticate with a token over TLS; a certificate,
		// when given, must verify.
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// adminToken reads --admin-token-file, or <data-dir>/admin.token, generating
// the latter (mode 0600) on first start.
func adminToken(opts Options) (string, error) {
	path := opts.AdminTokenFile
	generate := false
	if path == "" {
		path = filepath.Join(opts.DataDir, "admin.token")
		generate = true
	}
	data, err := os.ReadFile(path)
	if err == nil {
		tok := strings.TrimSpace(string(data))
		if tok == "" {
			return "", fmt.Errorf("admin token file %s is empty", path)
		}
		return tok, checkAdminToken(path, tok, generate, opts.Log)
	}
	if !generate || !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("admin token: %w", err)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := "myradm_" + hex.EncodeToString(b[:])
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	return tok, nil
}
