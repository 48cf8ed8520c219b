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
	"github.com/myriarch/myriarch/server/registry"
)

// Capability and MessageType name the custom message updaters send.
const (
	Capability  = providerwire.Capability
	MessageType = providerwire.MessageType
)

// MinInterval is the least time between two snapshots applied for one
// updater; a snapshot that comes sooner waits, and a newer one replaces it.
const MinInterval = time.Second

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
	applied map[uuid.UUID]time.Time   // when each updater's last snapshot applied; guarded by mu
	waiting map[uuid.UUID]*Snapshot   // snapshots waiting for MinInterval; guarded by mu
	timers  map[uuid.UUID]*time.Timer // guarded by mu
	changed []func(updater uuid.UUID) // guarded by mu
	closed  bool                      // guarded by mu
}

// New loads the snapshots the updaters in reg last reported (kept with
// them in the store).
func New(reg *registry.Registry, log *slog.Logger) *Book {
	b := &Book{reg: reg, log: log, now: time.Now, snaps: map[uuid.UUID]*Snapshot{}, applied: map[uuid.UUID]time.Time{},
		waiting: map[uuid.UUID]*Snapshot{}, timers: map[uuid.UUID]*time.Timer{}}
	for _, a := range reg.List(registry.KindUpdater, false) {
		if len(a.Extra) == 0 {
			continue
		}
		var s Snapshot
		if err := json.Unmarshal(a.Extra, &s); err != nil {
			log.Warn("stored providers snapshot unreadable; waiting for the updater to send one", "agent", a.UID, "err", err)
			continue
		}
		b.snaps[a.UID] = &s
	}
	return b
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
func (b *Book) Context(updater uuid.UUID) (map[string]string, map[string][]configrender.Mapping, bool) {
	s, ok := b.Get(updater)
	if !ok {
		return nil, nil, false
	}
	return s.Context, s.Dynamic, true
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
		resp.CustomCapabilities = &protobufs.CustomCapabilities{Capabilities: []string{Capability}}
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
	s, err := Parse(cm.GetData())
	if err != nil {
		b.reg.AddEvent(uid, EventRefused, "providers snapshot refused, the previous one stays: "+trimTo(err.Error(), 900))
		return
	}
	if len(s.Truncated) > 0 {
		b.reg.AddEvent(uid, EventTruncated, "providers snapshot cut to its bounds: "+describeCuts(s.Truncated))
	}
	b.offer(uid, s)
}

// offer applies s now, or when MinInterval has passed since the updater's
// last applied snapshot (the newest waiting one wins).
func (b *Book) offer(uid uuid.UUID, s *Snapshot) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	if last, ok := b.applied[uid]; ok {
		if wait := MinInterval - b.now().Sub(last); wait > 0 {
			b.waiting[uid] = s
			if b.timers[uid] == nil {
				b.timers[uid] = time.AfterFunc(wait, func() { b.release(uid) })
			}
			b.mu.Unlock()
			return
		}
	}
	fns := b.applyLocked(uid, s)
	b.mu.Unlock()
	b.tell(fns, uid)
}

func (b *Book) release(uid uuid.UUID) {
	b.mu.Lock()
	delete(b.timers, uid)
	s := b.waiting[uid]
	delete(b.waiting, uid)
	if s == nil || b.closed {
		b.mu.Unlock()
		return
	}
	fns := b.applyLocked(uid, s)
	b.mu.Unlock()
	b.tell(fns, uid)
}

// applyLocked keeps s and persists it; it returns the observers to tell
// when it changes what renders read.
func (b *Book) applyLocked(uid uuid.UUID, s *Snapshot) []func(uuid.UUID) {
	b.applied[uid] = b.now()
	old := b.snaps[uid]
	b.snaps[uid] = s
	if old.Equal(s) {
		return nil
	}
	data, _ := json.Marshal(s)
	b.reg.SetExtra(uid, data)
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
