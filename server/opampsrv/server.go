// Package opampsrv is myriarchd's OpAMP endpoint. WebSockets are served by
// wsconn (one epoll set for every agent socket instead of opamp-go's
// goroutine per connection); plain-HTTP polls by opamp-go's server package.
// Over both it authenticates before any OpAMP traffic, bounds message
// sizes, drops agents silent for three heartbeats, bounds every send in
// time, announces the server's capabilities and a heartbeat interval in the
// first response, asks for full state when its copy may be stale, and
// closes every connection on shutdown.
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
}

// Options configure the endpoint.
type Options struct {
	Heartbeat      time.Duration // offered to agents; default 30 s
	ReadTimeout    time.Duration // default 3 × Heartbeat
	SendTimeout    time.Duration // watchdog on one send; default 10 s
	MaxMessageSize int64         // default 8 MiB
	// Gate may refuse a new WebSocket connection before authentication
	// (backpressure): it returns an HTTP status and Retry-After seconds, or
	// 0 to admit. Plain-HTTP polls are not gated: each is one short request
	// and the steady poll rate of a large fleet would exhaust any storm budget.
	Gate func() (status int, retryAfter int)
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
}

// Server is the OpAMP endpoint. Create with New, serve with Serve, stop with Close.
type Server struct {
	opts    Options
	log     *slog.Logger
	auth    Authenticator
	reg     *registry.Registry
	metrics Metrics

	hooks []Hook

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
		Log:            log,
	})
	s.handler = http.HandlerFunc(s.route)
	return s, nil
}

func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if isPlainHTTP(r) {
		s.plain.ServeHTTP(w, r)
		return
	}
	s.serveWebSocket(w, r)
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
	s.http = &http.Server{
		Handler:           mux,
		ConnContext:       s.connContext,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * s.opts.ReadTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
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

// limitHTTPBody bounds plain-HTTP request bodies, decompressing gzip here so
// a compressed body cannot expand past the bound inside opamp-go.
func (s *Server) limitHTTPBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := io.Reader(http.MaxBytesReader(w, r.Body, s.opts.MaxMessageSize))
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(body)
			if err != nil {
				s.reject(w, http.StatusBadRequest, "bad_gzip")
				return
			}
			body = zr
			r.Header.Del("Content-Encoding")
		}
		data, err := io.ReadAll(io.LimitReader(body, s.opts.MaxMessageSize+1))
		if err != nil || int64(len(data)) > s.opts.MaxMessageSize {
			s.reject(w, http.StatusRequestEntityTooLarge, "too_large")
			return
		}
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

// admit decides whether a request may speak OpAMP: not while shutting
// down, not past the gate (WebSockets only), not without a credential.
func (s *Server) admit(r *http.Request) (store.Credential, *refusal) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return store.Credential{}, s.refusal("shutting_down", http.StatusServiceUnavailable, map[string]string{"Retry-After": "5"})
	}
	if s.opts.Gate != nil && !isPlainHTTP(r) {
		if status, retry := s.opts.Gate(); status != 0 {
			return store.Credential{}, s.refusal("backpressure", status, map[string]string{"Retry-After": fmt.Sprint(retry)})
		}
	}
	cred, err := s.auth.Authenticate(r)
	if err != nil {
		s.log.Info("refused agent connection", "remote", r.RemoteAddr, "reason", err)
		return store.Credential{}, s.refusal("unauthorized", http.StatusUnauthorized, map[string]string{"WWW-Authenticate": `Bearer realm="myriarch"`})
	}
	return cred, nil
}

// onConnecting admits a plain-HTTP poll (opamp-go's callback).
func (s *Server) onConnecting(r *http.Request) types.ConnectionResponse {
	cred, no := s.admit(r)
	if no != nil {
		return types.ConnectionResponse{Accept: false, HTTPStatusCode: no.status, HTTPResponseHeader: no.header}
	}
	c := &conn{srv: s, cred: cred}
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

// serveWebSocket admits and upgrades a WebSocket, then hands it to the poller.
func (s *Server) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	cred, no := s.admit(r)
	if no != nil {
		for k, v := range no.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(no.status)
		return
	}
	wc, err := wsconn.Upgrade(w, r)
	if err != nil {
		if s.metrics.Reject != nil {
			s.metrics.Reject("bad_handshake")
		}
		s.log.Debug("websocket upgrade failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	c := &conn{srv: s, cred: cred, ws: wc}
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
