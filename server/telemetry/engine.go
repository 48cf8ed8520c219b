// Package telemetry offers the agents of a fleet with a telemetry section
// where to send their own telemetry: OpAMP ConnectionSettingsOffers with
// own_metrics, own_logs and own_traces, to the fleet's collectors and to
// the updaters looking after them. It is the third user of the rollout
// kernel: a change of destinations moves through the fleet's waves (the
// Supervisor restarts the collector to apply it), a wave opening when every
// member of the earlier ones applied it, failed it, or cannot report.
//
// What an agent is offered is tracked by its hash, as a remote
// configuration is: the hash sent, and the hash and status the agent last
// reported (ConnectionSettingsStatus). An agent that does not report
// connection settings status (the upstream Supervisor cannot) counts as
// done once it was sent the offer; one that reports APPLYING (opamp-go
// agents report no more for own-telemetry settings) has it. The
// Supervisor applies an offer by restarting its collector, and keeps it
// across its own restarts.
// Removing a fleet's telemetry (or the agent leaving the fleet) sends an
// offer without destinations, so the agent stops sending.
package telemetry

import (
	"crypto/sha256"
	"encoding/binary"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/rollout"
)

// Member states.
const (
	// StateNone: the agent's fleet names no telemetry and nothing was offered.
	StateNone = "none"
	// StateNotOffered: the agent reports none of the signals its fleet names.
	StateNotOffered  = "not_offered"
	StateWaitingWave = "waiting_wave"
	StateOffered     = "offered" // sent, not reported yet
	StateSent        = "sent"    // sent to an agent that does not report status
	// StateApplying: the agent reports it has the offer and applies it
	// (opamp-go agents report no more for own-telemetry settings).
	StateApplying = "applying"
	StateApplied  = "applied"
	StateFailed   = "failed"
)

// States lists the member states, for metrics.
var States = []string{StateNotOffered, StateWaitingWave, StateOffered, StateSent, StateApplying, StateApplied, StateFailed}

// done: the member no longer holds back later waves.
func done(state string) bool {
	return state != StateWaitingWave && state != StateOffered
}

// Sender pushes a message to a connected agent (opampsrv.Server.Send).
type Sender interface {
	Send(uid uuid.UUID, msg *protobufs.ServerToAgent) bool
}

// Links finds the collector an updater looks after (offers.Engine).
type Links interface {
	LinkedCollector(updater uuid.UUID) (uuid.UUID, bool)
}

// Options configure an Engine.
type Options struct {
	// ResendAfter is how long an offer goes unanswered before it is sent
	// again in the answer to the agent's next message (default 30 s).
	ResendAfter time.Duration
	Now         func() time.Time
	Log         *slog.Logger
}

// member is what the engine knows of one agent; guarded by Engine.mu.
type member struct {
	fleet  string
	wave   int
	want   *protobufs.ConnectionSettingsOffers // nil: nothing to offer
	sent   []byte                              // hash last sent; nil: none
	sentAt time.Time
	// alt is the hash of want merged with the heartbeat offer of a first
	// answer (see merge), which the agent then reports instead.
	alt, altFor []byte // altFor: the hash of the want alt merged
	got         []byte // hash the agent last reported
	status      protobufs.ConnectionSettingsStatuses
	err         string
	reports     bool // the agent reports connection settings status
	state       string
}

// Engine is safe for concurrent use.
type Engine struct {
	opts  Options
	reg   *registry.Registry
	links Links
	out   *rollout.Queue[*protobufs.ServerToAgent]

	mu      sync.Mutex
	est     *estate.Estate            // guarded by mu
	members map[uuid.UUID]*member     // guarded by mu
	waves   map[string]*rollout.Waves // per fleet with telemetry; guarded by mu
}

// New makes an engine sending through s; Close stops it.
func New(reg *registry.Registry, links Links, s Sender, o Options) *Engine {
	if o.ResendAfter <= 0 {
		o.ResendAfter = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{opts: o, reg: reg, links: links, out: rollout.NewQueue[*protobufs.ServerToAgent](),
		members: map[uuid.UUID]*member{}, waves: map[string]*rollout.Waves{}}
	e.out.Serve(2, func(uid uuid.UUID, msg *protobufs.ServerToAgent) { s.Send(uid, msg) })
	return e
}

// Close stops sending.
func (e *Engine) Close() { e.out.Close() }

// SetEstate makes est's fleets' telemetry the one offered, re-evaluating
// every agent known.
func (e *Engine) SetEstate(est *estate.Estate) {
	e.mu.Lock()
	e.est = est
	e.waves = map[string]*rollout.Waves{}
	uids := make([]uuid.UUID, 0, len(e.members))
	for uid := range e.members {
		uids = append(uids, uid)
	}
	e.mu.Unlock()
	for _, uid := range uids {
		e.evaluate(uid, nil)
	}
	// Members were counted one by one: a wave may have looked open to a
	// member placed before the earlier waves' were.
	e.openGates()
}

// OnAgentMessage implements opampsrv.Hook: it notes what the agent reports
// and adds the offer to the answer when the agent lacks it.
func (e *Engine) OnAgentMessage(uid uuid.UUID, msg *protobufs.AgentToServer, resp *protobufs.ServerToAgent) {
	offer, opened := e.evaluate(uid, msg)
	if offer != nil {
		if resp.ConnectionSettings != nil {
			offer = merge(resp.ConnectionSettings, offer)
			e.mu.Lock()
			if m := e.members[uid]; m != nil {
				m.alt, m.altFor = offer.GetHash(), m.sent
			}
			e.mu.Unlock()
		}
		resp.ConnectionSettings = offer
	}
	e.offerTo(opened)
}

// offerTo pushes what is due to the members of waves that opened, and on
// to those of waves their moves open.
func (e *Engine) offerTo(uids []uuid.UUID) {
	for len(uids) > 0 {
		uid := uids[0]
		_, more := e.evaluate(uid, nil)
		uids = append(uids[1:], more...)
	}
}

// evaluate brings the member up to date with the agent (msg, when it sent
// one) and the estate, and returns the offer it is to be sent now (nil:
// none; without a message, an offer due is pushed instead) and the members
// of the waves its move opened.
func (e *Engine) evaluate(uid uuid.UUID, msg *protobufs.AgentToServer) (*protobufs.ConnectionSettingsOffers, []uuid.UUID) {
	a, ok := e.reg.Peek(uid)
	if !ok {
		return nil, nil
	}
	fleet := e.fleetOf(a)
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.members[uid]
	if m == nil {
		if fleet == nil && msg == nil {
			return nil, nil
		}
		m = &member{state: StateNone}
		e.members[uid] = m
	}
	if st := msg.GetConnectionSettingsStatus(); st != nil {
		m.got, m.status, m.err = st.GetLastConnectionSettingsHash(), st.GetStatus(), st.GetErrorMessage()
	}
	m.reports = a.HasCapability(protobufs.AgentCapabilities_AgentCapabilities_ReportsConnectionSettingsStatus)
	gates := rollout.Gates{}
	gates.Note(e.waves[m.fleet]) // where it was
	e.placeLocked(uid, m, a, fleet)
	gates.Note(e.waves[m.fleet]) // where it is
	var offer *protobufs.ConnectionSettingsOffers
	switch {
	case m.want == nil && m.sent == nil:
		if fleet == nil {
			delete(e.members, uid)
		}
	case e.dueLocked(m):
		m.sent, m.sentAt, offer = m.want.GetHash(), e.opts.Now(), m.want
		fallthrough
	default:
		e.setStateLocked(uid, m)
	}
	var opened []uuid.UUID
	for o := range gates.Opened() {
		if o != uid {
			opened = append(opened, o)
		}
	}
	if offer != nil && msg == nil {
		e.out.Push(uid, &protobufs.ServerToAgent{InstanceUid: uid[:], ConnectionSettings: offer})
		offer = nil
	}
	return offer, opened
}

// fleetOf is the fleet whose telemetry an agent follows: a collector's
// own, an updater's collector's.
func (e *Engine) fleetOf(a registry.Agent) *estate.Fleet {
	e.mu.Lock()
	est := e.est
	e.mu.Unlock()
	if est == nil {
		return nil
	}
	if a.Kind == registry.KindUpdater {
		col, ok := e.links.LinkedCollector(a.UID)
		if !ok {
			return nil
		}
		if a, ok = e.reg.Peek(col); !ok {
			return nil
		}
	}
	if a.Kind != registry.KindCollector {
		return nil
	}
	f, err := est.FleetFor(a.Attributes)
	if err != nil || f == nil || f.Telemetry == nil {
		return nil
	}
	return f
}

// placeLocked sets what m wants and its wave; caller holds e.mu.
func (e *Engine) placeLocked(uid uuid.UUID, m *member, a registry.Agent, f *estate.Fleet) {
	if m.fleet != "" && (f == nil || f.Name != m.fleet) {
		if w := e.waves[m.fleet]; w != nil {
			w.Remove(uid)
		}
	}
	if f == nil {
		m.fleet, m.wave = "", 0
		if m.sent != nil {
			m.want = offerFor(nil, a.Capabilities) // it was sent destinations: take them back
		} else {
			m.want = nil
		}
		return
	}
	m.fleet = f.Name
	w := e.waves[f.Name]
	if w == nil {
		n := 1
		if f.Rollout != nil {
			n = len(f.Rollout.Waves) + 1
		}
		w = rollout.New(n, done)
		e.waves[f.Name] = w
	}
	m.wave = min(f.WaveOf(a.Attributes), w.Len()-1)
	m.want = offerFor(f.Telemetry, a.Capabilities)
}

// has reports whether the agent reported the hash of what it wants.
func (m *member) has() bool {
	if m.want == nil || len(m.got) == 0 {
		return false
	}
	h := m.want.GetHash()
	return slices.Equal(m.got, h) || slices.Equal(m.altFor, h) && slices.Equal(m.got, m.alt)
}

// dueLocked reports whether m is to be sent what it wants now.
func (e *Engine) dueLocked(m *member) bool {
	if m.want == nil || m.has() {
		return false // nothing, or it has it (applied or failed: a failed one is not sent again)
	}
	h := m.want.GetHash()
	if m.sent == nil && empty(m.want) {
		return false // nothing to offer and nothing to take back
	}
	if slices.Equal(m.sent, h) && !m.reports {
		return false // it cannot say it has it: sent once
	}
	if m.fleet != "" {
		if w := e.waves[m.fleet]; w != nil && !w.GateOpen(m.wave) {
			return false
		}
	}
	return !slices.Equal(m.sent, h) || e.opts.Now().Sub(m.sentAt) >= e.opts.ResendAfter
}

// setStateLocked derives m's state and counts it in its fleet's waves.
func (e *Engine) setStateLocked(uid uuid.UUID, m *member) {
	h := m.want.GetHash()
	switch {
	case m.want == nil || m.fleet == "":
		m.state = StateNone
	case empty(m.want):
		m.state = StateNotOffered
	case m.has() && m.status == protobufs.ConnectionSettingsStatuses_ConnectionSettingsStatuses_FAILED:
		m.state = StateFailed
	case m.has() && m.status == protobufs.ConnectionSettingsStatuses_ConnectionSettingsStatuses_APPLYING:
		m.state = StateApplying
	case m.has() && m.status == protobufs.ConnectionSettingsStatuses_ConnectionSettingsStatuses_APPLIED:
		m.state = StateApplied
	case slices.Equal(m.sent, h) && !m.reports:
		m.state = StateSent
	case slices.Equal(m.sent, h):
		m.state = StateOffered
	default:
		m.state = StateWaitingWave
	}
	if w := e.waves[m.fleet]; w != nil && m.fleet != "" {
		w.Set(uid, m.wave, m.state)
	}
}

// openGates sends what is due to every member waiting for its wave whose
// gate is open (after an estate change; a member's move opens gates itself,
// see evaluate).
func (e *Engine) openGates() {
	e.mu.Lock()
	var due []uuid.UUID
	for uid, m := range e.members {
		if m.state == StateWaitingWave && e.dueLocked(m) {
			due = append(due, uid)
		}
	}
	e.mu.Unlock()
	e.offerTo(due)
}

// merge adds offer's own-telemetry settings to base (the heartbeat offer
// of a first answer, or nil); the hash covers both.
func merge(base, offer *protobufs.ConnectionSettingsOffers) *protobufs.ConnectionSettingsOffers {
	if base == nil {
		return offer
	}
	out := &protobufs.ConnectionSettingsOffers{Opamp: base.Opamp, OwnMetrics: offer.OwnMetrics, OwnLogs: offer.OwnLogs, OwnTraces: offer.OwnTraces}
	h := sha256.New()
	h.Write(base.GetHash())
	h.Write(offer.GetHash())
	out.Hash = h.Sum(nil)
	return out
}

// offerFor is the offer of t to an agent with caps: for each signal the
// agent reports (ReportsOwnMetrics, …), t's destination, or an empty one
// when t names none. The upstream Supervisor ignores an offer whose own_*
// are all absent and replaces the whole set with each offer it handles,
// so every signal is said, and an empty destination takes it back.
func offerFor(t *estate.Telemetry, caps uint64) *protobufs.ConnectionSettingsOffers {
	if t == nil {
		t = &estate.Telemetry{}
	}
	o := &protobufs.ConnectionSettingsOffers{}
	has := func(c protobufs.AgentCapabilities) bool { return caps&uint64(c) != 0 }
	if has(protobufs.AgentCapabilities_AgentCapabilities_ReportsOwnMetrics) {
		o.OwnMetrics = settings(t.Metrics)
	}
	if has(protobufs.AgentCapabilities_AgentCapabilities_ReportsOwnLogs) {
		o.OwnLogs = settings(t.Logs)
	}
	if has(protobufs.AgentCapabilities_AgentCapabilities_ReportsOwnTraces) {
		o.OwnTraces = settings(t.Traces)
	}
	o.Hash = hashOf(o)
	return o
}

// empty reports an offer of no destination.
func empty(o *protobufs.ConnectionSettingsOffers) bool {
	return o.GetOwnMetrics().GetDestinationEndpoint() == "" && o.GetOwnLogs().GetDestinationEndpoint() == "" &&
		o.GetOwnTraces().GetDestinationEndpoint() == ""
}

// settings is d as an offer; none (nil) is an empty destination.
func settings(d *estate.Destination) *protobufs.TelemetryConnectionSettings {
	if d == nil {
		return &protobufs.TelemetryConnectionSettings{}
	}
	s := &protobufs.TelemetryConnectionSettings{DestinationEndpoint: d.Endpoint}
	if len(d.Headers) > 0 {
		s.Headers = &protobufs.Headers{}
		keys := make([]string, 0, len(d.Headers))
		for k := range d.Headers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s.Headers.Headers = append(s.Headers.Headers, &protobufs.Header{Key: k, Value: d.Headers[k]})
		}
	}
	return s
}

// hashOf digests an offer's destinations, length-prefixed, in a fixed order.
func hashOf(o *protobufs.ConnectionSettingsOffers) []byte {
	h := sha256.New()
	put := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	for _, s := range []*protobufs.TelemetryConnectionSettings{o.OwnMetrics, o.OwnLogs, o.OwnTraces} {
		if s == nil {
			put("-")
			continue
		}
		put(s.GetDestinationEndpoint())
		for _, hd := range s.GetHeaders().GetHeaders() {
			put(hd.GetKey())
			put(hd.GetValue())
		}
		put("")
	}
	return h.Sum(nil)
}
