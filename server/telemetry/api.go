package telemetry

import (
	"encoding/hex"
	"strings"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/registry"
)

// AgentJSON is an agent's "telemetry" in the agents API.
type AgentJSON struct {
	Fleet string `json:"fleet,omitempty"`
	State string `json:"state"`
	// Offered is the hash of what the agent is to run, Sent of what it was
	// last sent, Reported of what it says it has, with its status.
	Offered  string `json:"offered,omitempty"`
	Sent     string `json:"sent,omitempty"`
	Reported string `json:"reported,omitempty"`
	Status   string `json:"status,omitempty"`
	Error    string `json:"error,omitempty"`
	// Signals are those offered: metrics, logs, traces.
	Signals []string `json:"signals"`
}

// Routes shows each agent's telemetry in the agents API.
func (e *Engine) Routes(api *admin.API) {
	api.AddDecorator(admin.LockedDecorator{Mu: &e.mu, Locked: e.decorateLocked})
}

func (e *Engine) decorateLocked(a *registry.Agent, j *admin.Agent) {
	m := e.members[a.UID]
	if m == nil || (m.want == nil && m.sent == nil) {
		return
	}
	out := AgentJSON{Fleet: m.fleet, State: m.state, Offered: hex.EncodeToString(m.want.GetHash()), Sent: hex.EncodeToString(m.sent),
		Reported: hex.EncodeToString(m.got), Error: m.err, Signals: []string{}}
	if len(m.got) > 0 {
		out.Status = strings.TrimPrefix(m.status.String(), "ConnectionSettingsStatuses_")
	}
	if m.want.GetOwnMetrics().GetDestinationEndpoint() != "" {
		out.Signals = append(out.Signals, "metrics")
	}
	if m.want.GetOwnLogs().GetDestinationEndpoint() != "" {
		out.Signals = append(out.Signals, "logs")
	}
	if m.want.GetOwnTraces().GetDestinationEndpoint() != "" {
		out.Signals = append(out.Signals, "traces")
	}
	j.Telemetry = out
}

// StateCounts counts the agents offered telemetry by state (every state
// listed, 0 included).
func (e *Engine) StateCounts() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int, len(States))
	for _, s := range States {
		out[s] = 0
	}
	for _, m := range e.members {
		if _, ok := out[m.state]; ok {
			out[m.state]++
		}
	}
	return out
}
