package configs

import (
	"context"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/rollout/rollouttest"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

// clock is a settable time source shared by the registry and the engine.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// sender records what the engine delivers over WebSockets.
type sender struct {
	mu   sync.Mutex
	last map[uuid.UUID]*protobufs.AgentRemoteConfig
	n    atomic.Int64
}

func (s *sender) Send(uid uuid.UUID, msg *protobufs.ServerToAgent) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = map[uuid.UUID]*protobufs.AgentRemoteConfig{}
	}
	s.last[uid] = msg.RemoteConfig
	s.n.Add(1)
	return true
}

// waitSent waits until the engine has delivered want to uid over its
// WebSocket, and returns what was last delivered.
func (s *sender) waitSent(t testing.TB, uid uuid.UUID, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := s.sent(uid)
		if got == want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *sender) sent(uid uuid.UUID) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rc := s.last[uid]; rc != nil {
		return hex.EncodeToString(rc.ConfigHash)
	}
	return ""
}

// countingStore counts the assignment rows written.
type countingStore struct {
	*sqlite.DB
	rows atomic.Int64
}

func (c *countingStore) WriteConfigs(ctx context.Context, b store.ConfigBatch) error {
	c.rows.Add(int64(len(b.Assignments)))
	return c.DB.WriteConfigs(ctx, b)
}

type harness struct {
	t      testing.TB
	dir    string // estate
	data   string
	clk    *clock
	reg    *registry.Registry
	db     *countingStore
	e      *Engine
	snd    *sender
	cred   store.Credential
	seq    map[uuid.UUID]uint64
	mu     sync.Mutex
	labels map[uuid.UUID]map[string]string // guarded by mu
}

const gatewayBlueprint = `name: gw
version: 1
owner: data-flow-owners
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
    config:
      protocols:
        http:
          endpoint: 127.0.0.1:4318
  - name: batch
    class: processor
    type: batch
    version: 1
  - name: out
    class: exporter
    type: file
    version: 1
    config:
      path: /var/lib/otelcol/${site.id}.json
pipelines:
  logs:
    - component: in
    - component: batch
    - component: out
`

const edgeFleet = `name: edge
selector:
  site.type: edge
config:
  blueprint: data-flow/gw
rollout:
  waveLabel: wave
  waves: ["1", "2"]
  maxFailures: 1
`

// newHarness writes an estate with one fleet (edge, waves 1 and 2) on the
// gateway Blueprint, and opens a registry on a fresh store. The engine is
// started by start, so agents can be registered before it.
func newHarness(t testing.TB) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), data: t.TempDir(), clk: &clock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
		snd: &sender{}, cred: rollouttest.Cred, seq: map[uuid.UUID]uint64{}}
	h.write("teams/data-flow/blueprints/gw.yaml", gatewayBlueprint)
	h.write("fleets/edge.yaml", edgeFleet)
	h.open()
	return h
}

func (h *harness) open() {
	h.t.Helper()
	db, err := sqlite.Open(context.Background(), h.data)
	if err != nil {
		h.t.Fatal(err)
	}
	h.db = &countingStore{DB: db}
	h.reg = rollouttest.Registry(h.t, db, registry.Options{Now: h.clk.now,
		PruneAfter: 30 * 24 * time.Hour, PruneInterval: 10 * time.Millisecond})
}

func (h *harness) write(rel, content string) {
	h.t.Helper()
	p := filepath.Join(h.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) estate() *estate.Estate {
	h.t.Helper()
	est, err := estate.Load(h.dir)
	if err != nil {
		h.t.Fatal(err)
	}
	return est
}

func (h *harness) start() {
	h.t.Helper()
	h.clk.add(time.Minute)
	e, err := New(context.Background(), h.reg, h.db, h.snd, slog.New(slog.DiscardHandler),
		Options{Now: h.clk.now, Estate: h.estate(), FlushEvery: time.Hour})
	if err != nil {
		h.t.Fatal(err)
	}
	h.e = e
	h.t.Cleanup(h.stop)
}

func (h *harness) stop() {
	if !noDetail.zero() {
		h.t.Errorf("the detail records share was written: %+v", *noDetail)
	}
	if h.e != nil {
		h.e.Close()
		h.e = nil
	}
	if h.reg != nil {
		h.reg.Close()
		h.db.Close()
		h.reg = nil
	}
}

// restart closes everything and opens it again on the same store.
func (h *harness) restart() {
	h.t.Helper()
	h.stop()
	h.open()
	h.start()
}

const colCaps = uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
	protobufs.AgentCapabilities_AgentCapabilities_ReportsRemoteConfig | protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus)

// connect registers (or reconnects) a collector with attributes given as
// "key=value" and returns the answer the server gives its first message.
func (h *harness) connect(uid uuid.UUID, attrs ...string) *protobufs.ServerToAgent {
	h.t.Helper()
	desc := rollouttest.Description([]string{"service.name=otelcol", "service.version=0.149.0"}, attrs...)
	return h.message(uid, &protobufs.AgentToServer{Capabilities: colCaps, AgentDescription: desc}, true)
}

// message sends one AgentToServer through the registry and the engine's hook,
// as opampsrv does.
func (h *harness) message(uid uuid.UUID, msg *protobufs.AgentToServer, first bool) *protobufs.ServerToAgent {
	h.t.Helper()
	h.mu.Lock()
	msg.SequenceNum = h.seq[uid]
	h.seq[uid]++
	h.mu.Unlock()
	if _, err := h.reg.Report(uid, h.cred, msg, false, first); err != nil {
		h.t.Fatal(err)
	}
	resp := &protobufs.ServerToAgent{}
	if h.e != nil {
		h.e.OnAgentMessage(uid, msg, resp)
	}
	return resp
}

// delivered returns the remote config the agent got first: in the answer
// to its message, or over its WebSocket (the engine's senders may be
// quicker than the answer).
func (h *harness) delivered(t *testing.T, uid uuid.UUID, resp *protobufs.ServerToAgent) *protobufs.AgentRemoteConfig {
	t.Helper()
	if rc := resp.GetRemoteConfig(); rc != nil {
		return rc
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		h.snd.mu.Lock()
		rc := h.snd.last[uid]
		h.snd.mu.Unlock()
		if rc != nil {
			return rc
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no remote config delivered, neither in the answer nor over the WebSocket")
	return nil
}

// status reports a RemoteConfigStatus for hash (hex).
func (h *harness) status(uid uuid.UUID, hash string, st protobufs.RemoteConfigStatuses, msg string) *protobufs.ServerToAgent {
	h.t.Helper()
	raw, _ := hex.DecodeString(hash)
	return h.message(uid, &protobufs.AgentToServer{RemoteConfigStatus: &protobufs.RemoteConfigStatus{
		LastRemoteConfigHash: raw, Status: st, ErrorMessage: msg}}, false)
}

// rec returns a copy of the engine's record of uid.
func (h *harness) rec(uid uuid.UUID) *record {
	h.t.Helper()
	h.e.mu.Lock()
	defer h.e.mu.Unlock()
	r := h.e.records[uid]
	if r == nil {
		h.t.Fatalf("no record of %s", uid)
	}
	cp := *r
	return &cp
}

func (h *harness) body(hash string) string {
	h.e.mu.Lock()
	defer h.e.mu.Unlock()
	return string(h.e.bodies[hash])
}

func (h *harness) reload() {
	h.t.Helper()
	h.e.SetEstate(h.estate())
}

// events returns the types of uid's events.
func (h *harness) events(uid uuid.UUID) []string {
	a, _ := h.reg.Get(uid)
	var out []string
	for _, ev := range a.Events {
		out = append(out, ev.Type)
	}
	return out
}

func (h *harness) eventMessages(uid uuid.UUID, typ string) []string {
	a, _ := h.reg.Get(uid)
	var out []string
	for _, ev := range a.Events {
		if ev.Type == typ {
			out = append(out, ev.Message)
		}
	}
	return out
}

const (
	applying = protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLYING
	applied  = protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED
	failedSt = protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED
)

// startedWithEdgeCollector starts an engine a minute ago and connects one
// collector of the edge fleet (site s1).
func startedWithEdgeCollector(t *testing.T) (*harness, uuid.UUID) {
	t.Helper()
	h := newHarness(t)
	h.start()
	h.clk.add(time.Minute)
	col := uuid.New()
	h.connect(col, "site.type=edge", "site.id=s1")
	return h, col
}
