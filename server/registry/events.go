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
	// EventConnectionReplaced: a new connection with the agent's instance
	// UID and credential replaced an open one (a reconnect before the old
	// socket was noticed dead, or a second process using the identity).
	EventConnectionReplaced = "connection_replaced"
	// EventHealthLimit: a health report too large to keep whole.
	EventHealthLimit = "health_limit"
)

// MaxEvents bounds each agent's history, in memory and in the store.
const MaxEvents = 200

// addEventLocked appends to the history and queues it for the store;
// caller holds r.mu for writing.
func (r *Registry) addEventLocked(a *agent, now time.Time, typ, msg string) {
	a.nextSeq++
	e := store.Event{Seq: a.nextSeq, Time: now.UTC(), Type: typ, Message: r.messages.String(limitMessage(msg))}
	a.events = append(a.events, e)
	if len(a.events) > MaxEvents {
		a.events = append(a.events[:0:0], a.events[len(a.events)-MaxEvents:]...)
	}
	r.pendingEvents[a.uid] = append(r.pendingEvents[a.uid], e)
}

func itoa(n int) string { return strconv.Itoa(n) }
