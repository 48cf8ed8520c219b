// Package keyrings offers the estate's signed keyring (trust/keyring.json:
// internal/keyring) to every updater that takes keyrings — it reports
// dev.myriarch.keyring.serial because a root key is pinned on its host —
// and whose serial is below the estate's. The keyring goes as an OpAMP
// custom message: pushed to the connected updaters that lack it when the
// estate changes, and in the answer to an updater's next message while it
// still lacks it (again after ResendAfter). myriarchd holds no root key:
// each updater checks the signature and says, in its attributes, which
// serial is in force or why it refused the keyring (named by ID).
//
// The keyring goes to every updater at once, not through a fleet's waves:
// it changes what may be installed next, never what runs.
package keyrings

import (
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/keyring"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/opampsrv"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/rollout"
)

// An updater's state of the estate's keyring.
const (
	// StateCurrent: the updater has the estate's serial in force.
	StateCurrent = "current"
	// StateBehind: it has an older one and was not sent the estate's
	// lately (offline, or not asked yet).
	StateBehind = "behind"
	// StateOffered: it was sent the estate's and has not reported it yet.
	StateOffered = "offered"
	// StateRefused: it refused the estate's keyring (see its error).
	StateRefused = "refused"
	// StateAhead: it has a newer serial than the estate's, which it keeps
	// (an estate keyring older than one already given out).
	StateAhead = "ahead"
)

// States lists the states, for metrics.
var States = []string{StateCurrent, StateBehind, StateOffered, StateRefused, StateAhead}

// EventRefused is the agent event of an updater that refused the estate's keyring.
const EventRefused = "keyring_refused"

// Sender pushes a message to a connected agent (opampsrv.Server.Send).
type Sender interface {
	Send(uid uuid.UUID, msg *protobufs.ServerToAgent) bool
}

// Options configure an Engine.
type Options struct {
	// ResendAfter is how long a keyring sent goes unreported before it is
	// sent again (default 30 s).
	ResendAfter time.Duration
	Now         func() time.Time
	Log         *slog.Logger
}

// offer is the estate's keyring as sent.
type offer struct {
	serial uint64
	id     string // keyring.ID of the document
	data   []byte // the custom message's data
}

// member is what the engine knows of one updater that takes keyrings;
// guarded by Engine.mu.
type member struct {
	serial  uint64
	refused string // AttrRefused as last reported
	sent    string // the ID of the keyring last sent
	sentAt  time.Time
}

// Engine is safe for concurrent use.
type Engine struct {
	opts Options
	reg  *registry.Registry
	out  *rollout.Queue[*protobufs.ServerToAgent]
	cur  atomic.Pointer[offer] // nil: the estate has no keyring

	mu      sync.Mutex
	members map[uuid.UUID]*member // guarded by mu
	others  map[uuid.UUID]bool    // agents known not to take keyrings; guarded by mu
}

// New makes an engine sending through s; Close stops it.
func New(reg *registry.Registry, s Sender, o Options) *Engine {
	if o.ResendAfter <= 0 {
		o.ResendAfter = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{opts: o, reg: reg, out: rollout.NewQueue[*protobufs.ServerToAgent](),
		members: map[uuid.UUID]*member{}, others: map[uuid.UUID]bool{}}
	e.out.Serve(2, func(uid uuid.UUID, msg *protobufs.ServerToAgent) { s.Send(uid, msg) })
	return e
}

// Close stops pushing.
func (e *Engine) Close() { e.out.Close() }

// SetEstate puts the estate's keyring in force and pushes it to the
// connected updaters that lack it.
func (e *Engine) SetEstate(est *estate.Estate) {
	var o *offer
	if k := est.Keyring; k != nil {
		o = &offer{serial: k.Doc.Serial, id: keyring.ID(k.Signed.Keyring), data: k.Signed.Encode()}
	}
	prev := e.cur.Swap(o)
	if o == nil || (prev != nil && prev.id == o.id) {
		return
	}
	e.opts.Log.Info("keyring in force", "serial", o.serial, "id", o.id)
	now := e.opts.Now()
	e.mu.Lock()
	var push []uuid.UUID
	for uid, m := range e.members {
		if m.serial < o.serial {
			m.sent, m.sentAt = o.id, now
			push = append(push, uid)
		}
	}
	e.mu.Unlock()
	for _, uid := range push {
		e.out.Push(uid, message(o))
	}
}

func message(o *offer) *protobufs.ServerToAgent {
	return &protobufs.ServerToAgent{CustomMessage: &protobufs.CustomMessage{Capability: keyring.Capability, Type: keyring.MessageType, Data: o.data}}
}

// OnAgentMessage implements opampsrv.Hook: it announces the capability,
// notes what an updater reports of its keyring and answers one that
// lacks the estate's with it.
func (e *Engine) OnAgentMessage(uid uuid.UUID, msg *protobufs.AgentToServer, resp *protobufs.ServerToAgent) {
	if resp.Capabilities != 0 || msg.GetCustomCapabilities() != nil {
		opampsrv.Announce(resp, keyring.Capability)
	}
	attrs, known := reported(msg.GetAgentDescription())
	if !known && !e.knows(uid) {
		attrs, known = e.peek(uid)
	}
	o := e.cur.Load()
	now := e.opts.Now()
	e.mu.Lock()
	if known {
		e.noteLocked(uid, attrs, o)
	}
	m := e.members[uid]
	send := o != nil && m != nil && m.serial < o.serial && !strings.HasPrefix(m.refused, o.id+":") &&
		(m.sent != o.id || now.Sub(m.sentAt) >= e.opts.ResendAfter)
	if send {
		m.sent, m.sentAt = o.id, now
	}
	e.mu.Unlock()
	if send {
		resp.CustomMessage = message(o).CustomMessage
	}
}

// knows reports whether uid's keyring attributes were seen.
func (e *Engine) knows(uid uuid.UUID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.members[uid] != nil || e.others[uid]
}

// peek reads what the registry holds of an agent not seen here yet (a
// server restarted, an agent that moved from another instance).
func (e *Engine) peek(uid uuid.UUID) (map[string]string, bool) {
	a, ok := e.reg.Peek(uid)
	if !ok || !a.Attributes.Known() {
		return nil, false
	}
	out := map[string]string{}
	for _, k := range []string{keyring.AttrSerial, keyring.AttrRefused} {
		if v, ok := a.Attributes.Get(k); ok {
			out[k] = v
		}
	}
	return out, true
}

// reported reads the keyring attributes of a description (false: none sent).
func reported(d *protobufs.AgentDescription) (map[string]string, bool) {
	if d == nil {
		return nil, false
	}
	out := map[string]string{}
	for _, kv := range d.GetNonIdentifyingAttributes() {
		if k := kv.GetKey(); k == keyring.AttrSerial || k == keyring.AttrRefused {
			out[k] = kv.GetValue().GetStringValue()
		}
	}
	return out, true
}

// noteLocked records what uid reports; an updater that reports no serial
// does not take keyrings.
func (e *Engine) noteLocked(uid uuid.UUID, attrs map[string]string, o *offer) {
	s, ok := attrs[keyring.AttrSerial]
	serial, err := strconv.ParseUint(s, 10, 64)
	if !ok || err != nil {
		delete(e.members, uid)
		e.others[uid] = true
		return
	}
	delete(e.others, uid)
	m := e.members[uid]
	if m == nil {
		m = &member{}
		e.members[uid] = m
	}
	refused := attrs[keyring.AttrRefused]
	if len(refused) > keyring.MaxRefused { // a peer's text, kept bounded
		refused = strings.ToValidUTF8(refused[:keyring.MaxRefused], "")
	}
	if o != nil && refused != m.refused && strings.HasPrefix(refused, o.id+":") {
		e.reg.AddEventOnce(uid, EventRefused, "keyring serial "+strconv.FormatUint(o.serial, 10)+" refused: "+strings.TrimPrefix(refused, o.id+": "))
	}
	m.serial, m.refused = serial, refused
}

// State is an updater's state of the estate's keyring, with the serial it
// has and its refusal.
type State struct {
	Serial uint64
	State  string
	Error  string
}

func (e *Engine) stateLocked(m *member, o *offer) State {
	st := State{Serial: m.serial, Error: m.refused}
	switch {
	case o == nil || m.serial == o.serial:
		st.State = StateCurrent
	case m.serial > o.serial:
		st.State = StateAhead
	case strings.HasPrefix(m.refused, o.id+":"):
		st.State = StateRefused
	case m.sent == o.id && e.opts.Now().Sub(m.sentAt) < e.opts.ResendAfter:
		st.State = StateOffered
	default:
		st.State = StateBehind
	}
	return st
}

// StateCounts counts the updaters that take keyrings by state (every
// state listed, 0 included).
func (e *Engine) StateCounts() map[string]int {
	o := e.cur.Load()
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int, len(States))
	for _, s := range States {
		out[s] = 0
	}
	for _, m := range e.members {
		out[e.stateLocked(m, o).State]++
	}
	return out
}
