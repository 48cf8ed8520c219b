package updater

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
)

// Health components the updater tracks (a mode that looks up what runs adds
// its own: mode.RunningLooker.Component).
const (
	componentSupervisorState = "supervisor_state" // reading persistent_state.yaml
	componentSupervisor      = "supervisor"       // the supervisor process (process control)
	componentCredentials     = "credentials"      // token file
)

// health is the updater's own health: healthy when every component is, with
// each problem as the component's error and all of them in LastError.
type health struct {
	mu       sync.Mutex
	start    time.Time
	problems map[string]string // component -> problem ("" = healthy)
	since    map[string]time.Time
}

func newHealth(start time.Time) *health {
	return &health{start: start, problems: map[string]string{}, since: map[string]time.Time{}}
}

// set records a component's state; it reports whether anything changed.
func (h *health) set(component string, problem error) bool {
	msg := ""
	if problem != nil {
		msg = problem.Error()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.problems[component]; ok && old == msg {
		return false
	}
	h.problems[component] = msg
	h.since[component] = time.Now()
	return true
}

func (h *health) proto() *protobufs.ComponentHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	names := make([]string, 0, len(h.problems))
	for n := range h.problems {
		names = append(names, n)
	}
	slices.Sort(names)
	top := &protobufs.ComponentHealth{
		Healthy:            true,
		StartTimeUnixNano:  uint64(h.start.UnixNano()),
		Status:             "running",
		StatusTimeUnixNano: uint64(time.Now().UnixNano()),
		ComponentHealthMap: map[string]*protobufs.ComponentHealth{},
	}
	var errs []string
	for _, n := range names {
		p := h.problems[n]
		c := &protobufs.ComponentHealth{
			Healthy:            p == "",
			Status:             "ok",
			LastError:          p,
			StartTimeUnixNano:  uint64(h.start.UnixNano()),
			StatusTimeUnixNano: uint64(h.since[n].UnixNano()),
		}
		if p != "" {
			c.Status = "error"
			errs = append(errs, fmt.Sprintf("%s: %s", n, p))
		}
		top.ComponentHealthMap[n] = c
	}
	if len(errs) > 0 {
		top.Healthy = false
		top.Status = "unhealthy"
		top.LastError = strings.Join(errs, "; ")
	}
	return top
}
