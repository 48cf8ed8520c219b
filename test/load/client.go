//go:build linux

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// stats are the load generator's counters.
type stats struct {
	connected       atomic.Int64 // sockets open with at least one answer read (HTTP: last poll answered)
	queueFull       atomic.Int64 // HTTP polls not sent because the worker queue was full
	dials           atomic.Int64
	dialErrors      atomic.Int64
	refused503      atomic.Int64
	refused429      atomic.Int64
	refusedOther    atomic.Int64
	disconnects     atomic.Int64
	sent            atomic.Int64
	received        atomic.Int64
	heartbeats      atomic.Int64
	writeErrors     atomic.Int64
	badFrames       atomic.Int64
	errorResponses  atomic.Int64
	fullStateAsked  atomic.Int64
	offers          atomic.Int64
	installsStarted atomic.Int64
	installsDone    atomic.Int64
	upgraded        atomic.Int64
}

// sim owns every simulated agent and its connections to myriarchd: one
// instance, or several sharing a PostgreSQL store, as behind a load
// balancer (see urlFor).
type sim struct {
	cfg     config
	urls    []string
	header  http.Header
	agents  []*agent
	dialSem chan struct{}
	dialer  []*websocket.Dialer // one per loopback source address
	st      stats
	// open counts the agents with a socket open to each instance (index
	// in urls), kept as sockets open and close.
	open     []atomic.Int64
	stopping atomic.Bool
	target   atomic.Value // string: the fleet's current targetVersion
	pending  sync.WaitGroup
	rtts     rttRecorder // heartbeat round trips, while a phase records them

	httpURL    string
	httpQ      []chan httpJob // one per worker; an agent always uses the same
	httpClient *http.Client
}

// newSim prepares the agents of cfg for the OpAMP URLs of one or more
// instances (plain HTTP polls the first).
func newSim(cfg config, urls []string, token string, tlsConfig *tls.Config) *sim {
	s := &sim{cfg: cfg, urls: urls, header: http.Header{"Authorization": {"Bearer " + token}},
		dialSem: make(chan struct{}, cfg.dialConcurrency), httpURL: "http" + strings.TrimPrefix(urls[0], "ws"),
		open: make([]atomic.Int64, len(urls))}
	s.target.Store(cfg.fromVersion)
	// Spread source addresses over 127.0.0.0/8 so ephemeral ports never run
	// out (28 000 per source address with the default port range) and the
	// kernel's search for a free one stays short (see sourceDialer).
	for i := 0; i < cfg.sourceAddrs; i++ {
		ip := net.IPv4(127, 1, byte(i/250), byte(2+i%250))
		nd := sourceDialer(ip, 10*time.Second)
		s.dialer = append(s.dialer, &websocket.Dialer{
			NetDialContext:   nd.DialContext,
			TLSClientConfig:  tlsConfig,
			HandshakeTimeout: 15 * time.Second,
			// Small buffers: OpAMP messages here are a few hundred bytes.
			ReadBufferSize:  512,
			WriteBufferSize: 512,
		})
	}
	run := cfg.seed
	now := time.Now()
	for h := 0; h < cfg.hosts; h++ {
		host := "host-" + strconv.Itoa(h)
		c := &agent{s: s, idx: 2 * h, uid: uidFor(run, 2*h), host: host, version: cfg.fromVersion,
			site: "site-" + strconv.Itoa(h%500), region: "region-" + strconv.Itoa(h%7), started: now}
		u := &agent{s: s, idx: 2*h + 1, uid: uidFor(run, 2*h+1), updater: true, host: host, peer: c, started: now}
		c.peer = u
		s.agents = append(s.agents, c, u)
	}
	if cfg.transport == "http" {
		s.startHTTP()
	}
	return s
}

// connectLater dials after d (0: now) on a timer, not a goroutine per
// waiting agent. An agent has at most one connection attempt pending, so
// it never races itself into two connections.
func (s *sim) connectLater(a *agent, d time.Duration) {
	if s.stopping.Load() {
		return
	}
	a.mu.Lock()
	if a.dialPending {
		a.mu.Unlock()
		return
	}
	a.dialPending = true
	a.mu.Unlock()
	s.schedule(a, d)
}

// schedule runs the pending attempt of a after d.
func (s *sim) schedule(a *agent, d time.Duration) {
	s.pending.Add(1)
	time.AfterFunc(d, func() {
		defer s.pending.Done()
		s.connect(a)
	})
}

// instanceFor is the instance (index in urls) of an agent's attempt after
// failed consecutive ones: agents are spread over the instances by index,
// and each failure moves the next attempt to the next instance (as a load
// balancer takes a dead backend out), so the agents of an instance that
// dies reconnect to the others.
func (s *sim) instanceFor(idx, failed int) int {
	return (idx + failed) % len(s.urls)
}

// perInstance counts the agents connected to each instance.
func (s *sim) perInstance() []int {
	out := make([]int, len(s.urls))
	for i := range s.open {
		out[i] = int(s.open[i].Load())
	}
	return out
}

// attemptDone ends a's pending attempt.
func (a *agent) attemptDone() {
	a.mu.Lock()
	a.dialPending = false
	a.mu.Unlock()
}

// backoff is jittered exponential: uniform in [0, min(cap, base·2^attempt)).
func (s *sim) backoff(attempt int) time.Duration {
	ceil := s.cfg.backoffBase << min(attempt, 10)
	if ceil > s.cfg.backoffCap {
		ceil = s.cfg.backoffCap
	}
	return time.Duration(rand.N(int64(ceil))) + time.Millisecond
}

func (s *sim) connect(a *agent) {
	if s.stopping.Load() {
		return
	}
	if s.cfg.transport == "http" {
		s.connectHTTP(a)
		return
	}
	a.mu.Lock()
	up := a.ws != nil
	a.mu.Unlock()
	if up {
		a.attemptDone()
		return
	}
	s.dialSem <- struct{}{}
	released := false
	release := func() {
		if !released {
			released = true
			<-s.dialSem
		}
	}
	defer release()
	s.st.dials.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	a.mu.Lock()
	inst := s.instanceFor(a.idx, a.attempt)
	a.mu.Unlock()
	ws, resp, err := s.dialer[a.idx%len(s.dialer)].DialContext(ctx, s.urls[inst], s.header)
	cancel()
	if err != nil {
		a.mu.Lock()
		a.attempt++
		attempt := a.attempt
		a.mu.Unlock()
		delay := s.backoff(attempt)
		if resp != nil && errors.Is(err, websocket.ErrBadHandshake) {
			switch resp.StatusCode {
			case http.StatusServiceUnavailable, http.StatusTooManyRequests:
				if resp.StatusCode == http.StatusTooManyRequests {
					s.st.refused429.Add(1)
				} else {
					s.st.refused503.Add(1)
				}
				// Honour Retry-After, with jitter so refused agents do not return together.
				if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && ra > 0 {
					base := time.Duration(ra) * time.Second
					delay = base + time.Duration(rand.N(int64(base)))
				}
			default:
				s.st.refusedOther.Add(1)
			}
		} else {
			s.st.dialErrors.Add(1)
		}
		release()
		s.schedule(a, delay) // still this agent's one pending attempt
		return
	}
	ws.SetReadLimit(1 << 20)
	a.mu.Lock()
	a.dialPending = false
	a.ws = ws
	a.inst = inst
	s.open[inst].Add(1)
	a.gen++
	a.attempt = 0
	a.reconnectIn = 0
	var m *protobufs.AgentToServer
	full := !a.everUp
	if full {
		m = a.fullState()
	} else {
		m = a.compact()
	}
	version := a.version
	ok := a.sendLocked(m)
	if ok {
		a.everUp = true
	}
	a.mu.Unlock()
	if ok && full && !a.updater {
		a.versionReported(version)
	}
	// The dial slot passes to the reader, which frees it at the first answer:
	// dialConcurrency bounds handshakes plus first exchanges in flight.
	released = true
	s.pending.Add(1)
	go s.read(a, ws)
}

// read is the one goroutine per open socket: it reads answers until the
// socket fails, then schedules a reconnect.
func (s *sim) read(a *agent, ws *websocket.Conn) {
	defer s.pending.Done()
	var m protobufs.ServerToAgent
	counted := false
	defer func() {
		if !counted {
			<-s.dialSem
		}
	}()
	for {
		_ = ws.SetReadDeadline(time.Now().Add(s.cfg.readTimeout))
		_, data, err := ws.ReadMessage()
		if err != nil {
			break
		}
		s.st.received.Add(1)
		if !counted {
			counted = true
			s.st.connected.Add(1)
			<-s.dialSem
		}
		m.Reset()
		if err := decodeFrame(data, &m); err != nil {
			s.st.badFrames.Add(1)
			continue
		}
		a.handle(&m)
	}
	_ = ws.Close()
	if counted {
		s.st.connected.Add(-1)
	}
	s.st.disconnects.Add(1)
	a.mu.Lock()
	if a.ws == ws {
		a.ws = nil
		s.open[a.inst].Add(-1)
	}
	delay := a.reconnectIn
	a.reconnectIn = 0
	a.mu.Unlock()
	if delay == 0 {
		delay = s.backoff(0)
	}
	s.connectLater(a, delay)
}

// heartbeats sends each connected agent a heartbeat every interval, spread
// evenly over the interval, from one goroutine, until ctx ends.
func (s *sim) heartbeats(ctx context.Context) {
	const tick = 100 * time.Millisecond
	per := max(1, len(s.agents)*int(tick)/int(s.cfg.heartbeat))
	t := time.NewTicker(tick)
	defer t.Stop()
	next := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i := 0; i < per; i++ {
			s.agents[next].heartbeat()
			next = (next + 1) % len(s.agents)
		}
	}
}

// closeAll stops reconnecting and closes every socket.
func (s *sim) closeAll() {
	s.stopping.Store(true)
	for _, a := range s.agents {
		a.mu.Lock()
		if a.ws != nil {
			_ = a.ws.Close()
		}
		a.mu.Unlock()
	}
}
