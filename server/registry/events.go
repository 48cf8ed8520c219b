package registry

import (
	"strconv"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// Event types recorded in agent histories.
const (
	EventRegistered            = "registered"
	EventIdentityConflict      = "identity_conflict"
	EventLabelAttributeDropped = "label_attribute_dropped"
	EventAttributeLimit        = "attribute_limit"
	EventKindChanged           = "kind_changed"
)

// MaxEvents bounds each agent's history, in memory and in the store.
const MaxEvents = 200

// addEvent appends to the history under r.mu and queues it for the store.
func (r *Registry) addEvent(a *agent, now time.Time, typ, msg string) {
	a.nextSeq++
	e := store.Event{Seq: a.nextSeq, Time: now.UTC(), Type: typ, Message: r.messages.intern(msg)}
	a.events = append(a.events, e)
	if len(a.events) > MaxEvents {
		a.events = append(a.events[:0:0], a.events[len(a.events)-MaxEvents:]...)
	}
	r.pendingEvents[a.uid] = append(r.pendingEvents[a.uid], e)
}

func itoa(n int) string { return strconv.Itoa(n) }

// interner shares the storage of equal strings. Event messages mostly
// repeat across agents ("offer installing → up_to_date (otelcol-contrib
// 0.149.1)" for every host of a rollout), and with up to MaxEvents of them
// per agent their bytes would otherwise be most of an agent's history.
// It is bounded: when full it starts over, so unique messages (ones naming
// an instance UID) cannot crowd out the common ones for long. Not safe for
// concurrent use (the registry calls it under its lock).
type interner struct{ m map[string]string }

// maxInterned bounds the interner (≈ 1 MB of messages at most).
const maxInterned = 8192

func (in *interner) intern(s string) string {
	if v, ok := in.m[s]; ok {
		return v
	}
	if in.m == nil || len(in.m) >= maxInterned {
		in.m = make(map[string]string, 256)
	}
	in.m[s] = s
	return s
}
