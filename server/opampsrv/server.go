// Package opampsrv is myriarchd's OpAMP endpoint. WebSockets are served by
// wsconn (one epoll set for every agent socket instead of opamp-go's
// goroutine per connection); plain-HTTP polls by opamp-go's server package.
// Over both it authenticates from the request headers before reading any
// body or spending any admission budget, bounds message sizes and the time
// a body may take, drops agents silent for three heartbeats, bounds every
// send in time, announces the server's capabilities and a heartbeat
// interval in the first response, asks for full state when its copy may be
// stale, and closes every connection on shutdown.
//
// Refused requests are answered at once and their connection closed.
// Refusals of one source address (failed authentications and identity
// conflicts alike) beyond a small budget get 429, or for a conflict an
// answer to retry later, and are no longer logged one by one (one line,
// then a count a minute). A second WebSocket of an agent (same instance
// UID and credential) replaces the first, whether both are open to this
// instance or one to another sharing the store: the old one is closed
// with close code 4000 (CloseReplaced) by the instance it is open to, and
// the replacement is recorded as a connection_replaced event of the agent
// and counted there.
package opampsrv

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	opampserver "github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"

	"github.com/myriarch/myriarch/server/backpressure"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/wsconn"
)

// Path is where OpAMP is served.
const Path = "/v1/opamp"

// Capabilities the server announces.
const Capabilities = protobufs.ServerCapabilities_ServerCapabilities_AcceptsStatus |
	protobufs.ServerCapabilities_ServerCapabilities_OffersPackages |
	protobufs.ServerCapabilities_ServerCapabilities_AcceptsPackagesStatus |
	protobufs.ServerCapabilities_ServerCapabilities_OffersRemoteConfig |
	protobufs.ServerCapabilities_ServerCapabilities_AcceptsEffectiveConfig

// Authenticator turns a connecting request into a credential.
type Authenticator interface {
	Authenticate(r *http.Request) (store.Credential, error)
}

// Hook lets features layered on the registry react to a message and add to
// the response (for example package offers). It runs after the registry has
// recorded the message.
type Hook interface {
	OnAgentMessage(uid uuid.UUID, msg *protobufs.AgentToServer, resp *protobufs.ServerToAgent)
}

// Metrics receives counts; nil fields are ignored.
type Metrics struct {
	Message func()
	Reject  func(reason string)
	// Replaced counts agent connections replaced by a newer one.
	Replaced func()
}

// CloseReplaced is the WebSocket close code of a connection replaced by a
// newer connection of the same agent (instance UID and credential), to
// this instance or another sharing the store.
const CloseReplaced = 4000

// Options configure the endpoint.
type Options struct {
	Heartbeat      time.Duration // offered to agents; default 30 s
	ReadTimeout    time.Duration // default 3 × Heartbeat
	SendTimeout    time.Duration // watchdog on one send; default 10 s
	MaxMessageSize int64         // default 8 MiB
	// Gate may refuse a new, authenticated WebSocket connection
	// (backpressure): it returns an HTTP status and Retry-After seconds, or
	// 0 to admit. Plain-HTTP polls are not gated: each is one short request
	// and the steady poll rate of a large fleet would exhaust any storm budget.
	Gate func() (status int, retryAfter int)
	// BodyTimeout bounds reading one plain-HTTP body; default 30 s. A body
	// must also arrive at MinBodyRate bytes/s (default 1 KiB/s, -1 for
	// none) after its first 5 s, and no read may wait more than 10 s.
	BodyTimeout time.Duration
	MinBodyRate int64
	// FailureRate and FailureBurst are each source address's budget of
	// refused authentications and identity conflicts per second; beyond
	// it requests without a credential get 429, connections presenting
	// an instance UID bound to another credential are asked to retry
	// later, and neither is logged or recorded. Defaults 1 and 20.
	FailureRate  float64
	FailureBurst int
}

func (o *Options) defaults() {
	if o.Heartbeat <= 0 {
		o.Heartbeat = 30 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 3 * o.Heartbeat
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = 10 * time.Second
	}
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = 8 << 20
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = 30 * time.Second
	}
	if o.MinBodyRate == 0 {
		o.MinBodyRate = 1 << 10
	}
	if o.FailureRate <= 0 {
		o.FailureRate = 1
	}
	if o.FailureBurst <= 0 {
		o.FailureBurst = 20
	}
}

// Server is the OpAMP endpoint. Create with New, serve with Serve, stop with Close.
type Server struct {
	opts    Options
	log     *slog.Logger
	auth    Authenticator
	reg     *registry.Registry
	metrics Metrics

	hooks []Hook

	failures  *backpressure.Keyed // refused authentications and identity conflicts per source
	refusals  *backpressure.RefusalLog
	conflicts *backpressure.RefusalLog // identity conflicts' lines (WARN)

	mu     sync.Mutex
	conns  map[*conn]struct{}
	byUID  map[uuid.UUID]*conn
	closed bool

	handler     http.Handler
	plain       http.Handler // opamp-go's handler, for plain-HTTP polls
	poller      wsconn.Poller
	connContext func(context.Context, net.Conn) context.Context
	http        *http.Server
}

// New prepares the endpoint; hooks may be added with AddHook before Serve.
func New(reg *registry.Registry, auth Authenticator, log *slog.Logger, metrics Metrics, opts Options) (*Server, error) {
	opts.defaults()
	s := &Server{
		opts: opts, log: log, auth: auth, reg: reg, metrics: metrics,
		conns: map[*conn]struct{}{}, byUID: map[uuid.UUID]*conn{},
		failures: backpressure.NewKeyed(backpressure.KeyedOptions{Rate: opts.FailureRate, Burst: opts.FailureBurst}),
		refusals: backpressure.NewRefusalLog(backpressure.RefusalLogOptions{Log: log, Level: slog.LevelInfo,
			First:  "refused agent connection; further refusals from this source are counted for a minute",
			More:   "refused further agent connections from one source",
			Others: "refused agent connections from further sources"}),
		conflicts: backpressure.NewRefusalLog(backpressure.RefusalLogOptions{Log: log, Level: slog.LevelWarn,
			First:  "identity conflict: refused a connection presenting an instance UID bound to another credential; further conflicts from this source are counted for a minute",
			More:   "identity conflicts refused from one source",
			Others: "identity conflicts refused from further sources"}),
	}
	if reg != nil {
		reg.OnReplacedElsewhere(s.onReplacedElsewhere)
	}
	// WebSockets are ours (wsconn: no goroutine per idle agent); plain-HTTP
	// polls go through opamp-go.
	srv := opampserver.New(&opampLogger{log: log})
	h, cc, err := srv.Attach(opampserver.Settings{Callbacks: types.Callbacks{OnConnecting: s.onConnecting}})
	if err != nil {
		return nil, fmt.Errorf("attach opamp server: %w", err)
	}
	s.plain = s.limitHTTPBody(http.HandlerFunc(h))
	s.connContext = cc
	s.poller = wsconn.NewPoller(wsconn.Options{
		MaxMessageSize: opts.MaxMessageSize,
		IdleTimeout:    opts.ReadTimeout,
		SendTimeout:    opts.SendTimeout,
		OnDrop:         s.countReject,
		Log:            log,
	})
	s.handler = http.HandlerFunc(s.route)
	return s, nil
}

// route admits a request from its headers alone, then serves it as a
// plain-HTTP poll or a WebSocket.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	cred, no := s.admit(r)
	if no != nil {
		for k, v := range no.header {
			w.Header().Set(k, v)
		}
		// Nothing of the request is read: its body, if any, stays unread
		// and the connection ends with the answer.
		w.Header().Set("Connection", "close")
		w.WriteHeader(no.status)
		return
	}
	if isPlainHTTP(r) {
		s.plain.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), credKey{}, cred)))
		return
	}
	s.serveWebSocket(w, r, cred)
}

// credKey carries an admitted plain-HTTP request's credential to onConnecting.
type credKey struct{}

// countReject counts one refusal (also the poller's own drops).
func (s *Server) countReject(reason string) {
	if s.metrics.Reject != nil {
		s.metrics.Reject(reason)
	}
}

func isPlainHTTP(r *http.Request) bool {
	return r.Header.Get("Content-Type") == "application/x-protobuf"
}

// AddHook registers a message hook. Not safe once traffic flows.
func (s *Server) AddHook(h Hook) { s.hooks = append(s.hooks, h) }

// Handler returns the handler to mount at Path (for callers with their own mux).
func (s *Server) Handler() http.Handler { return s.handler }

// Serve accepts connections on ln until Close. mux must route Path to
// Handler(); other routes (artifacts) may share the listener.
func (s *Server) Serve(ln net.Listener, mux http.Handler, tlsConfig *tls.Config) error {
	ln = wsconn.NewListener(ln) // below TLS, so the poller can read TLS sessions too
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	s.mu.Lock()
	if s.closed { // Close ran before Serve: nothing to serve
		s.mu.Unlock()
		return ln.Close()
	}
	s.http = &http.Server{
		Handler:           mux,
		ConnContext:       s.connContext,
		ReadHeaderTimeout: 10 * time.Second,
		// What a connection may make the server hold before its request is
		// authenticated: OpAMP requests carry a few short headers.
		MaxHeaderBytes: MaxHeaderBytes,
		IdleTimeout:    2 * s.opts.ReadTimeout,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	hs := s.http
	s.mu.Unlock()
	err := hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops accepting, then closes every agent connection (agents
// reconnect by themselves) and waits for ctx for their handlers and for
// in-flight plain-HTTP requests.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	hs := s.http
	s.mu.Unlock()
	err := s.poller.Close(ctx)
	if hs != nil {
		err = errors.Join(err, hs.Shutdown(ctx))
	}
	return err
}

// MaxHeaderBytes bounds the request line and headers of one request.
const MaxHeaderBytes = 8 << 10

// limitHTTPBody bounds plain-HTTP request bodies in bytes and in time,
// decompressing gzip here so a compressed body cannot expand past the bound
// inside opamp-go. Requests reach it authenticated.
func (s *Server) limitHTTPBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		timed := newTimedBody(r.Body, http.NewResponseController(w), s.opts.BodyTimeout, s.opts.MinBodyRate)
		body := io.Reader(http.MaxBytesReader(w, timed, s.opts.MaxMessageSize))
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(body)
			if err != nil {
				w.Header().Set("Connection", "close")
				s.reject(w, http.StatusBadRequest, "bad_gzip")
				return
			}
			body = zr
			r.Header.Del("Content-Encoding")
		}
		data, err := io.ReadAll(io.LimitReader(body, s.opts.MaxMessageSize+1))
		var slow *slowBodyError
		switch {
		case errors.As(err, &slow):
			w.Header().Set("Connection", "close")
			s.log.Debug("plain-HTTP body too slow; refused", "remote", r.RemoteAddr, "err", err)
			s.reject(w, http.StatusRequestTimeout, "slow_body")
			return
		case err != nil || int64(len(data)) > s.opts.MaxMessageSize:
			w.Header().Set("Connection", "close")
			s.reject(w, http.StatusRequestEntityTooLarge, "too_large")
			return
		}
		timed.done()
		r.Body = io.NopCloser(bytes.NewReader(data))
		next.ServeHTTP(w, r)
	})
}

func (s *Server) reject(w http.ResponseWriter, status int, reason string) {
	if s.metrics.Reject != nil {
		s.metrics.Reject(reason)
	}
	w.WriteHeader(status)
}

// admit decides, from the request's headers, whether it may speak OpAMP:
// not while shutting down, not without a credential, and (WebSockets only)
// not past the gate. The credential is checked first, so requests without
// one never spend the admission budget of the agents that have one; they
// spend their source address's budget of failures instead.
func (s *Server) admit(r *http.Request) (store.Credential, *refusal) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return store.Credential{}, s.refusal("shutting_down", http.StatusServiceUnavailable, map[string]string{"Retry-After": "5"})
	}
	cred, err := s.auth.Authenticate(r)
	if err != nil {
		src := backpressure.SourceKey(r.RemoteAddr)
		if !s.failures.Allow(src) {
			return store.Credential{}, s.refusal("unauthorized_throttled", http.StatusTooManyRequests,
				map[string]string{"Retry-After": "60", "WWW-Authenticate": `Bearer realm="myriarch"`})
		}
		s.refusals.Refused(src, "remote", r.RemoteAddr, "reason", err)
		return store.Credential{}, s.refusal("unauthorized", http.StatusUnauthorized, map[string]string{"WWW-Authenticate": `Bearer realm="myriarch"`})
	}
	if s.opts.Gate != nil && !isPlainHTTP(r) {
		if status, retry := s.opts.Gate(); status != 0 {
			return store.Credential{}, s.refusal("backpressure", status, map[string]string{"Retry-After": fmt.Sprint(retry)})
		}
	}
	return cred, nil
}

// onConnecting accepts a plain-HTTP poll (opamp-go's callback) that route
// has admitted.
func (s *Server) onConnecting(r *http.Request) types.ConnectionResponse {
	cred, ok := r.Context().Value(credKey{}).(store.Credential)
	if !ok { // not through route: never admitted
		return types.ConnectionResponse{Accept: false, HTTPStatusCode: http.StatusUnauthorized}
	}
	c := &conn{srv: s, cred: cred, remote: r.RemoteAddr, source: backpressure.SourceKey(r.RemoteAddr)}
	return types.ConnectionResponse{
		Accept: true,
		ConnectionCallbacks: types.ConnectionCallbacks{
			OnMessage: func(_ context.Context, _ types.Connection, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
				return c.handle(msg)
			},
			OnReadMessageError: func(types.Connection, int, []byte, error) {
				if s.metrics.Reject != nil {
					s.metrics.Reject("bad_frame")
				}
			},
		},
	}
}

// serveWebSocket upgrades an admitted WebSocket and hands it to the poller.
func (s *Server) serveWebSocket(w http.ResponseWriter, r *http.Request, cred store.Credential) {
	wc, err := wsconn.Upgrade(w, r)
	if err != nil {
		if s.metrics.Reject != nil {
			s.metrics.Reject("bad_handshake")
		}
		s.log.Debug("websocket upgrade failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	c := &conn{srv: s, cred: cred, ws: wc, remote: r.RemoteAddr, source: backpressure.SourceKey(r.RemoteAddr)}
	wc.Value = c
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	if err := s.poller.Serve(wc, wsHandler{s}); err != nil {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.log.Debug("websocket not served", "remote", r.RemoteAddr, "err", err)
	}
}

// refusal is an HTTP answer that refuses an agent.
type refusal struct {
	status int
	header map[string]string
}

func (s *Server) refusal(reason string, status int, hdr map[string]string) *refusal {
	if s.metrics.Reject != nil {
		s.metrics.Reject(reason)
	}
	return &refusal{status: status, header: hdr}
}

// Send delivers msg to an agent over its WebSocket at once and reports
// whether it could. Plain-HTTP agents and disconnected ones get what they need
// from the hooks, which answer their next message.
func (s *Server) Send(uid uuid.UUID, msg *protobufs.ServerToAgent) bool {
	s.mu.Lock()
	c := s.byUID[uid]
	s.mu.Unlock()
	if c == nil {
		return false
	}
	msg.InstanceUid = uid[:]
	return c.send(msg) == nil
}

// DisconnectCredential closes every connection authenticated with cred (token revocation).
func (s *Server) DisconnectCredential(cred store.Credential) int {
	s.mu.Lock()
	var victims []*conn
	for c := range s.conns {
		if c.cred == cred {
			victims = append(victims, c)
		}
	}
	s.mu.Unlock()
	for _, c := range victims {
		c.close()
	}
	return len(victims)
}

type opampLogger struct{ log *slog.Logger }

func (l *opampLogger) Debugf(_ context.Context, format string, v ...any) {
	l.log.Debug(fmt.Sprintf(format, v...), "component", "opamp-go")
}
func (l *opampLogger) Errorf(_ context.Context, format string, v ...any) {
	l.log.Debug(fmt.Sprintf(format, v...), "component", "opamp-go")
}
