package registry

import (
	"strconv"
	"time"

	"github.com/google/uuid"
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

// exactHistory is the length up to which a history held in memory grows
// one event at a time (each event a new array of exactly its length).
const exactHistory = 8

// addEventLocked appends to the history and queues it for the store;
// caller holds r.mu for writing.
func (r *Registry) addEventLocked(a *agent, now time.Time, typ, msg string) {
	a.nextSeq++
	e := store.Event{Seq: a.nextSeq, Time: now.UTC(), Type: typ, Message: r.messages.String(limitMessage(msg))}
	evs := a.history()
	if n := len(evs); n < exactHistory {
		// Most agents have a few events: an array of exactly their number
		// instead of append's doubled capacity.
		evs = append(make([]store.Event, 0, n+1), evs...)
	}
	evs = append(evs, e)
	if len(evs) > MaxEvents {
		evs = append(evs[:0:0], evs[len(evs)-MaxEvents:]...)
	}
	a.setHistory(evs)
	r.pendingEvents[a.uid] = append(r.pendingEvents[a.uid], e)
}

// history is the agent's history held here.
func (a *agent) history() []store.Event {
	if a.events == nil {
		return nil
	}
	return *a.events
}

// setHistory holds evs as the agent's history (none when empty).
func (a *agent) setHistory(evs []store.Event) {
	switch {
	case len(evs) == 0:
		a.events = nil
	case a.events == nil:
		a.events = &evs
	default:
		*a.events = evs
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// AddEventOnce is AddEvent, unless the newest event of typ in uid's
// history held here already says msg (a report sent again after a
// reconnect or a restart); it reports whether it added the event.
func (r *Registry) AddEventOnce(uid uuid.UUID, typ, msg string) bool {
	r.mu.RLock()
	a, ok := r.agents[uid]
	said := false
	if ok {
		evs := a.history()
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Type == typ {
				said = evs[i].Message == limitMessage(msg)
				break
			}
		}
	}
	r.mu.RUnlock()
	if !ok || said {
		return false
	}
	return r.AddEvent(uid, typ, msg)
}
