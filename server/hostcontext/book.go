package hostcontext

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/configrender"
	"github.com/myriarch/myriarch/internal/providerwire"
	"github.com/myriarch/myriarch/server/opampsrv"
	"github.com/myriarch/myriarch/server/registry"
)

// Capability and MessageType name the custom message updaters send.
const (
	Capability  = providerwire.Capability
	MessageType = providerwire.MessageType
)

// MinInterval is the least time between two snapshots taken (parsed and
// applied) for one updater; a snapshot that comes sooner waits unread,
// and a newer one replaces it.
const MinInterval = time.Second

// MaxWaiting bounds the bytes of snapshots waiting for MinInterval, all
// updaters together. An updater sends at most one snapshot per
// MinInterval, so only one that floods the server waits; a snapshot that
// would go over the bound is dropped with an event.
const MaxWaiting = 32 << 20

// Events recorded on the agent that sent a snapshot.
const (
	EventRefused   = "providers_refused"
	EventTruncated = "providers_truncated"
	EventIgnored   = "providers_ignored"
)

// Book keeps the newest snapshot of every updater. It is safe for
// concurrent use. It is an opampsrv hook: add it to the OpAMP server.
type Book struct {
	reg *registry.Registry
	log *slog.Logger
	now func() time.Time

	mu      sync.Mutex
	snaps   map[uuid.UUID]*Snapshot   // guarded by mu
	taken   map[uuid.UUID]time.Time   // when each updater's last snapshot was taken; guarded by mu
	waiting map[uuid.UUID][]byte      // snapshots waiting for MinInterval, unread; guarded by mu
	waitLen int                       // bytes in waiting; guarded by mu
	busy    map[uuid.UUID]bool        // updaters whose snapshot is being taken; guarded by mu
	timers  map[uuid.UUID]*time.Timer // guarded by mu
	changed []func(updater uuid.UUID) // guarded by mu
	closed  bool                      // guarded by mu
}

// New loads the snapshots the updaters in reg last reported (kept with
// them in the store).
func New(reg *registry.Registry, log *slog.Logger) *Book {
	b := &Book{reg: reg, log: log, now: time.Now, snaps: map[uuid.UUID]*Snapshot{}, taken: map[uuid.UUID]time.Time{},
		waiting: map[uuid.UUID][]byte{}, timers: map[uuid.UUID]*time.Timer{}, busy: map[uuid.UUID]bool{}}
	for _, a := range reg.List(registry.KindUpdater, false) {
		if len(a.Extra) == 0 {
			continue
		}
		s, err := decodeStored(a.Extra)
		if err != nil {
			log.Warn("stored providers snapshot not used; waiting for the updater to send one", "agent", a.UID, "err", err)
			continue
		}
		b.snaps[a.UID] = s
	}
	return b
}

// MaxStoredJSON bounds a stored snapshot read back: what Encode writes of
// MaxStored bytes of variables, with room for the JSON around them.
const MaxStoredJSON = 2 * MaxStored

// decodeStored reads a snapshot kept with an updater's record. One that an
// earlier version kept without today's bounds is not used.
func decodeStored(data []byte) (*Snapshot, error) {
	if len(data) > MaxStoredJSON {
		return nil, fmt.Errorf("%d bytes, over the %d kept per updater", len(data), MaxStoredJSON)
	}
	if err := providerwire.CheckShape(data); err != nil {
		return nil, err
	}
	var s Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	return &s, nil
}

// OnChange registers fn to learn which updater's snapshot changed. fn runs
// without the Book's lock and must not block for long.
func (b *Book) OnChange(fn func(updater uuid.UUID)) {
	b.mu.Lock()
	b.changed = append(b.changed, fn)
	b.mu.Unlock()
}

// Get returns the newest snapshot of an updater (read-only).
func (b *Book) Get(updater uuid.UUID) (*Snapshot, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.snaps[updater]
	return s, ok
}

// Context is what the snapshot of updater adds to a render input.
func (b *Book) Context(updater uuid.UUID) (configrender.Input, bool) {
	s, ok := b.Get(updater)
	if !ok {
		return configrender.Input{}, false
	}
	return configrender.Input{Context: s.Context, Types: s.Types, Dynamic: s.Dynamic}, true
}

// Close stops waiting snapshots from being applied.
func (b *Book) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for _, t := range b.timers {
		t.Stop()
	}
}

// OnAgentMessage implements opampsrv.Hook: it announces the capability in
// the first answer and takes snapshots from updaters.
func (b *Book) OnAgentMessage(uid uuid.UUID, msg *protobufs.AgentToServer, resp *protobufs.ServerToAgent) {
	if resp.Capabilities != 0 || msg.GetCustomCapabilities() != nil {
		opampsrv.Announce(resp, Capability)
	}
	cm := msg.GetCustomMessage()
	if cm == nil || cm.GetCapability() != Capability {
		return
	}
	a, ok := b.reg.Peek(uid)
	if !ok {
		return
	}
	if a.Kind != registry.KindUpdater {
		b.reg.AddEvent(uid, EventIgnored, fmt.Sprintf("a %s sent a providers %s; only an updater's providers are used", a.Kind, cm.GetType()))
		return
	}
	if cm.GetType() != MessageType {
		b.reg.AddEvent(uid, EventIgnored, fmt.Sprintf("unknown providers message type %q (want %q)", trimTo(cm.GetType(), 64), MessageType))
		return
	}
	b.offer(uid, cm.GetData())
}

// offer takes data now, or unread once MinInterval has passed since the
// updater's last snapshot was taken and that one is done (the newest
// waiting one wins): a flood of snapshots costs one parse a MinInterval,
// and one updater's snapshots are applied in the order they came.
func (b *Book) offer(uid uuid.UUID, data []byte) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	if b.busy[uid] || b.now().Sub(b.taken[uid]) < MinInterval {
		prev := len(b.waiting[uid])
		if b.waitLen-prev+len(data) > MaxWaiting {
			b.mu.Unlock()
			b.reg.AddEvent(uid, EventRefused, fmt.Sprintf("providers snapshot of %d bytes dropped: snapshots sent faster than one a second "+
				"already wait with %d MiB; the previous one stays until the next is taken", len(data), MaxWaiting>>20))
			return
		}
		b.waitLen += len(data) - prev
		b.waiting[uid] = data
		b.scheduleLocked(uid)
		b.mu.Unlock()
		return
	}
	b.startLocked(uid)
	b.mu.Unlock()
	b.take(uid, data)
}

// scheduleLocked sets the timer that takes uid's waiting snapshot, unless
// one is set or a take is running (which schedules when done).
func (b *Book) scheduleLocked(uid uuid.UUID) {
	if b.timers[uid] != nil || b.busy[uid] || b.waiting[uid] == nil {
		return
	}
	wait := max(MinInterval-b.now().Sub(b.taken[uid]), 0)
	b.timers[uid] = time.AfterFunc(wait, func() { b.release(uid) })
}

func (b *Book) startLocked(uid uuid.UUID) {
	b.taken[uid] = b.now()
	b.busy[uid] = true
}

func (b *Book) release(uid uuid.UUID) {
	b.mu.Lock()
	delete(b.timers, uid)
	data, ok := b.waiting[uid]
	delete(b.waiting, uid)
	b.waitLen -= len(data)
	if !ok || b.closed {
		b.mu.Unlock()
		return
	}
	b.startLocked(uid)
	b.mu.Unlock()
	b.take(uid, data)
}

// take parses data and keeps the snapshot, outside the Book's lock: a
// refused one changes nothing but an event.
func (b *Book) take(uid uuid.UUID, data []byte) {
	s, err := Parse(data)
	switch {
	case err != nil:
		b.reg.AddEvent(uid, EventRefused, "providers snapshot refused, the previous one stays: "+trimTo(err.Error(), 900))
	case len(s.Truncated) > 0:
		b.reg.AddEvent(uid, EventTruncated, "providers snapshot cut to its bounds: "+describeCuts(s.Truncated))
	}
	b.mu.Lock()
	delete(b.busy, uid)
	var fns []func(uuid.UUID)
	if err == nil && !b.closed {
		fns = b.applyLocked(uid, s)
	}
	if !b.closed {
		b.scheduleLocked(uid)
	}
	b.mu.Unlock()
	b.tell(fns, uid)
}

// applyLocked keeps s and persists it; it returns the observers to tell
// when it changes what renders read.
func (b *Book) applyLocked(uid uuid.UUID, s *Snapshot) []func(uuid.UUID) {
	old := b.snaps[uid]
	b.snaps[uid] = s
	if old.Equal(s) {
		return nil
	}
	b.reg.SetExtra(uid, s.Encode())
	return slices.Clone(b.changed)
}

func (b *Book) tell(fns []func(uuid.UUID), uid uuid.UUID) {
	for _, fn := range fns {
		fn(uid)
	}
}

func describeCuts(m map[string]int) string {
	out := ""
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i == 8 {
			return out + fmt.Sprintf("; and %d more", len(m)-8)
		}
		if i > 0 {
			out += "; "
		}
		out += fmt.Sprintf("%s: %d", k, m[k])
	}
	return out
}

func trimTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
