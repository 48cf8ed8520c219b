package registry

import (
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/internal/stamp"
	"github.com/myriarch/myriarch/server/store"
)

// agent is the registry's mutable record, guarded by Registry.mu. Its maps
// are never mutated after being built: they are replaced, so snapshots can
// share them.
type agent struct {
	uid  uuid.UUID
	cred *store.Credential    // shared (see sharedValues)
	desc attributes.Described // the attribute view and the reported lists in it
	// descSum is the digest of the description its row holds, as read or
	// as last encoded here (0: none); rows are compared by it. The bytes
	// are not kept: the stored description is encodeDescription of the two
	// lists in desc, built again when the row is written.
	descSum      uint64
	tokenLabels  map[string]string
	labels       map[string]string
	capabilities uint64
	// health is the last ComponentHealth reported, as its row holds it
	// (marshaled: a fraction of the message's size; decoded when asked).
	health    string
	firstSeen stamp.Stamp
	lastSeen  stamp.Stamp
	conns     int32
	kind      kindCode
	hasDesc   bool
	hasHealth bool
	httpSeen  bool // last contact was a plain-HTTP poll
	seqKnown  bool
	persisted bool // its row has been written (the identity binding is durable)
	// historyInStore: merged from another instance's record, the agent's
	// history is read from the store when asked (events holds only what
	// was recorded here since).
	historyInStore bool
	// events is the history held here (nil: none), replaced, never
	// modified in place: snapshots share it.
	events     *[]store.Event
	nextSeq    uint64
	lastMsgSeq uint64
	extra      *[]byte // feature-owned JSON; nil: none; replaced, never modified
	// instance: the instance sharing the database its WebSocket is open
	// to, as its row says (nil: none; shared, see sharedValues); remoteUntil: connected to another
	// instance, online until this lease ends; leftAt: when its connection
	// to another instance was seen closing (see remote.go), or while it is
	// connected here (connectedHere), when its newest connection here
	// opened (see elsewhere.go): the record has no room for both. Kept as
	// stamps: the registry holds every agent of the estate.
	instance    *string
	seenWritten stamp.Stamp // the last-seen time last written
	remoteUntil stamp.Stamp
	leftAt      stamp.Stamp
}

// Agent is an immutable snapshot of one agent.
type Agent struct {
	UID        uuid.UUID
	Credential store.Credential
	Kind       Kind
	Online     bool
	// Connected is true while a WebSocket of the agent is open: messages
	// can be pushed to it (a plain-HTTP agent gets them in an answer).
	Connected      bool
	Identifying    attributes.Part
	NonIdentifying attributes.Part
	Attributes     attributes.View
	Labels         map[string]string
	Capabilities   uint64
	health         string // marshaled; see Health
	hasHealth      bool
	FirstSeen      time.Time
	LastSeen       time.Time
	Events         []store.Event
	// Extra is JSON owned by features layered on the registry.
	Extra []byte
	// Host is Attributes[HostKey] ("" when not reported).
	Host string
}

// Health is the last ComponentHealth the agent reported (nil: none, or
// none readable). Each call decodes it anew.
func (a *Agent) Health() *protobufs.ComponentHealth {
	if !a.hasHealth {
		return nil
	}
	var h protobufs.ComponentHealth
	if proto.Unmarshal([]byte(a.health), &h) != nil {
		return nil
	}
	return &h
}

// HasCapability reports whether the agent announced c.
func (a *Agent) HasCapability(c protobufs.AgentCapabilities) bool {
	return a.Capabilities&uint64(c) != 0
}

func (a *agent) online(now time.Time, httpWindow time.Duration) bool {
	return a.conns > 0 || (a.httpSeen && now.Sub(a.lastSeen.Time()) < httpWindow) || now.Before(a.remoteUntil.Time())
}

func (a *agent) snapshot(now time.Time, httpWindow time.Duration, withEvents bool) Agent {
	s := Agent{
		UID:            a.uid,
		Credential:     *a.cred,
		Kind:           a.kind.Kind(),
		Online:         a.online(now, httpWindow),
		Connected:      a.conns > 0,
		Identifying:    a.desc.Identifying(),
		NonIdentifying: a.desc.NonIdentifying(),
		Attributes:     a.desc.View,
		Host:           a.desc.View.Value(HostKey),
		Labels:         a.labels,
		Capabilities:   a.capabilities,
		health:         a.health,
		hasHealth:      a.hasHealth,
		FirstSeen:      a.firstSeen.Time(),
		LastSeen:       a.lastSeen.Time(),
		Extra:          a.extraBytes(),
	}
	if evs := a.history(); withEvents && len(evs) > 0 {
		// Shared, not copied: addEvent only appends past this length or
		// builds a new array, so the snapshot's elements never change.
		s.Events = evs[:len(evs):len(evs)]
	}
	return s
}

func (a *agent) record() store.Agent {
	var health []byte
	if a.hasHealth {
		health = []byte(a.health)
	}
	return store.Agent{
		UID:          a.uid,
		Credential:   *a.cred,
		Kind:         string(a.kind.Kind()),
		Description:  a.encodedDesc(),
		Capabilities: a.capabilities,
		Health:       health,
		TokenLabels:  a.tokenLabels,
		FirstSeen:    a.firstSeen.Time(),
		LastSeen:     a.lastSeen.Time(),
		Extra:        a.extraBytes(),
	}
}

// extraOf is the record's hold of feature-owned JSON: nil when empty (rows
// give an empty, not a nil, slice for none).
func extraOf(b []byte) *[]byte {
	if len(b) == 0 {
		return nil
	}
	return &b
}

// extraBytes is the feature-owned JSON (nil: none).
func (a *agent) extraBytes() []byte {
	if a.extra == nil {
		return nil
	}
	return *a.extra
}

// connectedHere reports whether a WebSocket of the agent is open here and
// is the agent's connection: with instances sharing the store (self, this
// instance's name, not ""), one whose row names this instance. Connections
// here replaced by a newer one to another instance (see elsewhere.go) are
// only closing.
func (a *agent) connectedHere(self string) bool {
	return a.conns > 0 && (self == "" || a.instanceName() == self)
}

// instanceName is the instance the agent's WebSocket is open to, as its row
// says ("": none).
func (a *agent) instanceName() string {
	if a.instance == nil {
		return ""
	}
	return *a.instance
}
