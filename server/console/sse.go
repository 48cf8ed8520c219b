package console

import (
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Live stream limits: per session and in all.
const (
	maxStreamsPerSession = 32
	maxStreams           = 1024
	maxStreamUIDs        = 8
	keepAlive            = 25 * time.Second
	// agentsPerTick: a view of every change refreshes at most once per
	// LiveInterval for each this many agents.
	agentsPerTick      = 20000
	streamWriteTimeout = 10 * time.Second
)

// streamLimit counts open live streams.
type streamLimit struct {
	mu        sync.Mutex
	total     int              // guarded by mu
	bySession map[*session]int // guarded by mu
}

func newStreamLimit() *streamLimit { return &streamLimit{bySession: map[*session]int{}} }

func (l *streamLimit) acquire(s *session) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= maxStreams || l.bySession[s] >= maxStreamsPerSession {
		return false
	}
	l.total++
	l.bySession[s]++
	return true
}

func (l *streamLimit) release(s *session) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.bySession[s]--; l.bySession[s] <= 0 {
		delete(l.bySession, s)
	}
}

// events serves GET /events[?uid=…]: a Server-Sent Events stream that says
// "change" when the view should refresh (every change, or changes of the
// given agents), at most once per LiveInterval, and "logout" when the
// session ends. It carries no data: the page fetches itself again.
func (c *Console) events(w http.ResponseWriter, r *http.Request, s *session) {
	raw := r.URL.Query()["uid"]
	if len(raw) > maxStreamUIDs {
		http.Error(w, "at most 8 uid parameters", http.StatusBadRequest)
		return
	}
	uids := make([]uuid.UUID, 0, len(raw))
	for _, v := range raw {
		u, err := uuid.Parse(v)
		if err != nil {
			http.Error(w, "uid must be an instance UID", http.StatusBadRequest)
			return
		}
		uids = append(uids, u)
	}
	if !c.streams.acquire(s) {
		http.Error(w, "too many live streams", http.StatusServiceUnavailable)
		return
	}
	defer c.streams.release(s)
	every := 1
	if len(uids) == 0 && c.opts.AgentCount != nil {
		// A view of every change walks every agent to refresh: slower
		// refreshes for large estates (every 5 s at 100 000 agents).
		every = c.opts.AgentCount() / agentsPerTick
	}
	sub := c.hub.subscribe(uids, every)
	defer c.hub.unsubscribe(sub)

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(msg string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := w.Write([]byte(msg)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("retry: 3000\n\n") {
		return
	}
	ka := time.NewTicker(keepAlive)
	defer ka.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			send("event: logout\ndata:\n\n")
			return
		case <-sub.wake:
			if !send("event: change\ndata:\n\n") {
				return
			}
		case <-ka.C:
			if !c.sessions.valid(r.Context(), s) { // ended on another instance
				send("event: logout\ndata:\n\n")
				return
			}
			if !send(": keep-alive\n\n") {
				return
			}
		}
	}
}
