//go:build linux

package main

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"
)

// agent is one simulated OpAMP agent: a collector (as the upstream
// Supervisor reports it) or its host's myriarch-updater. It holds no
// goroutine of its own except the reader of its open WebSocket; heartbeats
// come from the shared scheduler and install steps from timers.
type agent struct {
	s       *sim
	idx     int
	uid     uuid.UUID
	updater bool
	peer    *agent
	host    string
	site    string
	region  string
	started time.Time

	mu          sync.Mutex
	ws          *websocket.Conn
	inst        int  // the instance ws is connected to (index in sim.urls)
	httpUp      bool // plain HTTP: the last poll was answered
	dialPending bool // a connection attempt (or HTTP retry) is scheduled
	seq         uint64
	everUp      bool // registered at least once (first message carries full state)
	attempt     int  // consecutive failed connection attempts
	reconnectIn time.Duration
	version     string // collector: its service.version
	gen         int    // bumped on every connection, so stale timers do nothing

	// updater: the offer being worked on
	pkgStatus  *protobufs.PackageStatuses
	installing string
	delay      time.Duration // simulated download+install time of the current offer

	// collector: when it reported the version its updater installed
	upgradedAt atomic.Int64
	upDelay    atomic.Int64
	// offerAt: an updater's last offer that started an install (unix ns).
	offerAt atomic.Int64
	// hbAt: when the heartbeat awaiting its answer was sent (unix ns, 0:
	// none); dropped: the reconnect phase closed this agent's socket.
	hbAt    atomic.Int64
	dropped atomic.Bool
}

// send writes one AgentToServer on the agent's socket (caller holds a.mu).
func (a *agent) sendLocked(m *protobufs.AgentToServer) bool {
	if a.s.cfg.transport == "http" {
		if !a.httpUp {
			a.everUp = false // a retry is scheduled; it carries the full state
			return false
		}
		return a.s.enqueue(a, m, m.AgentDescription != nil)
	}
	if a.ws == nil {
		a.everUp = false // what was not sent goes with the full state on reconnect
		return false
	}
	a.seq++
	m.SequenceNum = a.seq
	buf := make([]byte, 1, 1+proto.Size(m))
	buf, err := proto.MarshalOptions{}.MarshalAppend(buf, m)
	if err != nil {
		return false
	}
	_ = a.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := a.ws.WriteMessage(websocket.BinaryMessage, buf); err != nil {
		a.s.st.writeErrors.Add(1)
		_ = a.ws.Close() // the reader sees the error and reconnects
		return false
	}
	a.s.st.sent.Add(1)
	return true
}

func (a *agent) heartbeat() {
	a.mu.Lock()
	// Noted before the send: an answer read before the note would leave
	// it for the next answer, a heartbeat later.
	a.hbAt.Store(time.Now().UnixNano())
	if a.sendLocked(a.compact()) {
		a.s.st.heartbeats.Add(1)
	} else {
		a.hbAt.Store(0)
	}
	a.mu.Unlock()
}

// handle reacts to one ServerToAgent (reader goroutine).
func (a *agent) handle(m *protobufs.ServerToAgent) {
	st := &a.s.st
	if at := a.hbAt.Swap(0); at != 0 && !a.dropped.Load() {
		a.s.rtts.add(time.Duration(time.Now().UnixNano() - at))
	}
	if e := m.ErrorResponse; e != nil {
		st.errorResponses.Add(1)
		if ri := e.GetRetryInfo(); ri != nil {
			a.mu.Lock()
			a.reconnectIn = time.Duration(ri.RetryAfterNanoseconds)
			a.mu.Unlock()
		}
		return
	}
	if m.Flags&uint64(protobufs.ServerToAgentFlags_ServerToAgentFlags_ReportFullState) != 0 {
		st.fullStateAsked.Add(1)
		a.mu.Lock()
		a.sendLocked(a.fullState())
		a.mu.Unlock()
	}
	if a.updater && m.PackagesAvailable != nil {
		a.offer(m.PackagesAvailable)
	}
}

// offer starts a simulated install when the desired set names a version the
// updater is not already working on: Downloading → Installing → Installed,
// each after a short random delay, then the collector restarts on the new version.
func (a *agent) offer(pa *protobufs.PackagesAvailable) {
	a.s.st.offers.Add(1)
	for name, p := range pa.Packages {
		a.mu.Lock()
		if p.Version == a.installing || p.Version == a.peer.currentVersion() {
			a.mu.Unlock()
			continue
		}
		a.installing = p.Version
		a.offerAt.Store(time.Now().UnixNano())
		gen := a.gen
		steps := []protobufs.PackageStatusEnum{
			protobufs.PackageStatusEnum_PackageStatusEnum_Downloading,
			protobufs.PackageStatusEnum_PackageStatusEnum_Installing,
			protobufs.PackageStatusEnum_PackageStatusEnum_Installed,
		}
		var at time.Duration
		for _, step := range steps {
			at += a.s.cfg.installStep/2 + rand.N(a.s.cfg.installStep)
			step := step
			time.AfterFunc(at, func() { a.report(gen, name, p, pa.AllPackagesHash, step) })
		}
		a.delay = at
		a.mu.Unlock()
		a.s.st.installsStarted.Add(1)
	}
}

func (a *agent) report(gen int, name string, p *protobufs.PackageAvailable, all []byte, step protobufs.PackageStatusEnum) {
	if a.s.stopping.Load() {
		return
	}
	a.mu.Lock()
	if a.installing != p.Version {
		a.mu.Unlock()
		return
	}
	ps := &protobufs.PackageStatus{
		Name: name, AgentHasVersion: a.peer.currentVersion(), ServerOfferedVersion: p.Version,
		ServerOfferedHash: p.Hash, Status: step,
	}
	if step == protobufs.PackageStatusEnum_PackageStatusEnum_Downloading {
		ps.DownloadDetails = &protobufs.PackageDownloadDetails{DownloadPercent: 50, DownloadBytesPerSecond: 1 << 20}
	}
	if step == protobufs.PackageStatusEnum_PackageStatusEnum_Installed {
		ps.AgentHasVersion, ps.AgentHasHash = p.Version, p.Hash
	}
	a.pkgStatus = &protobufs.PackageStatuses{
		Packages:                      map[string]*protobufs.PackageStatus{name: ps},
		ServerProvidedAllPackagesHash: all,
	}
	m := a.compact()
	m.PackageStatuses = a.pkgStatus
	a.sendLocked(m) // if it is down, the status goes with the full state on reconnect
	delay := a.delay
	a.mu.Unlock()
	if step == protobufs.PackageStatusEnum_PackageStatusEnum_Installed {
		a.s.st.installsDone.Add(1)
		// The updater restarts the supervisor: the collector's connection
		// drops and comes back reporting the new service.version.
		a.peer.restartOn(p.Version, delay)
	}
}

func (a *agent) currentVersion() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.version
}

// restartOn simulates the supervisor restart after a binary switch.
func (a *agent) restartOn(version string, simulated time.Duration) {
	a.mu.Lock()
	a.version = version
	a.everUp = false // a fresh supervisor reports its full description
	a.reconnectIn = time.Duration(1+rand.N(500)) * time.Millisecond
	ws := a.ws
	simulated += a.reconnectIn // the simulated supervisor restart is not the server's time either
	a.mu.Unlock()
	a.upDelay.Store(int64(simulated))
	switch {
	case a.s.cfg.transport == "http":
		a.s.connectLater(a, a.reconnectIn)
	case ws != nil:
		_ = ws.Close()
	default:
		a.s.connectLater(a, a.reconnectIn)
	}
}

// versionReported is called after the collector's full state with version
// went out on a fresh connection.
func (a *agent) versionReported(v string) {
	if v == a.s.target.Load().(string) && a.upgradedAt.Load() == 0 {
		a.upgradedAt.Store(time.Now().UnixNano())
		a.s.st.upgraded.Add(1)
	}
}

var zeroHdr = []byte{0}

func decodeFrame(data []byte, m *protobufs.ServerToAgent) error {
	// OpAMP over WebSocket: a varint header (0), then the protobuf.
	if len(data) > 0 && bytes.HasPrefix(data, zeroHdr) {
		data = data[1:]
	}
	return proto.Unmarshal(data, m)
}
