package admin

import (
	"sort"
	"strings"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/server/registry"
)

// Agent is the JSON form of an agent in the admin API.
type Agent struct {
	InstanceUID    string            `json:"instanceUid"`
	Kind           string            `json:"kind"`
	Online         bool              `json:"online"`
	Credential     Credential        `json:"credential"`
	Identifying    map[string]string `json:"identifying"`
	NonIdentifying map[string]string `json:"nonIdentifying"`
	Attributes     map[string]string `json:"attributes"`
	Labels         map[string]string `json:"labels"`
	Capabilities   []string          `json:"capabilities"`
	Health         *Health           `json:"health"`
	FirstSeen      time.Time         `json:"firstSeen"`
	LastSeen       time.Time         `json:"lastSeen"`
	Events         []Event           `json:"events"`
	Updater        *Updater          `json:"updater,omitempty"`
	Pairing        any               `json:"pairing"`
	Assignment     any               `json:"assignment"`
	Offer          any               `json:"offer"`
	// Telemetry is where the agent is offered to send its own telemetry
	// (none: its fleet names none).
	Telemetry any `json:"telemetry,omitempty"`
	// Keyring is an updater's state of the estate's signed keyring (none:
	// it does not take keyrings).
	Keyring any `json:"keyring,omitempty"`
	// LabelSources says where each label comes from (registry.LabelFrom…);
	// GET /api/v1/agents/{uid} only.
	LabelSources map[string]string `json:"labelSources,omitempty"`

	// lists: listings write the reported lists and the view from the
	// agent's description, without a map for each (Identifying,
	// NonIdentifying and Attributes are nil then).
	lists                       bool
	identifying, nonIdentifying attributes.Part
	attrs                       attributes.View
}

// Credential names what an agent registered with (never a secret).
type Credential struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Event is one history entry.
type Event struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Message string    `json:"message"`
}

// Health is the agent's reported ComponentHealth.
type Health struct {
	Healthy    bool               `json:"healthy"`
	Status     string             `json:"status"`
	LastError  string             `json:"lastError"`
	StartTime  *time.Time         `json:"startTime"`
	StatusTime *time.Time         `json:"statusTime"`
	Components map[string]*Health `json:"components,omitempty"`
}

// Updater is what a myriarch-updater reports about its installation.
type Updater struct {
	InstallMode          *string `json:"installMode"`
	ServerEndpoint       *string `json:"serverEndpoint"`
	SupervisorService    *string `json:"supervisorService"`
	CollectorInstanceUID *string `json:"collectorInstanceUid"`
	ImageVersion         *string `json:"imageVersion"`
	ImageDigest          *string `json:"imageDigest,omitempty"`
}

// Updater attribute keys (dev.myriarch.*).
const (
	AttrInstallMode       = "dev.myriarch.install.mode"
	AttrServerEndpoint    = "dev.myriarch.server.endpoint"
	AttrSupervisorService = "dev.myriarch.supervisor.service"
	AttrCollectorUID      = "dev.myriarch.collector.instance_uid"
	AttrImageVersion      = "dev.myriarch.collector.image.version"
	AttrImageDigest       = "dev.myriarch.collector.image.digest"
)

// Decorator adds feature fields (pairing, assignment, offer) to an agent's JSON.
type Decorator interface {
	Decorate(a *registry.Agent, j *Agent)
}

// toJSON renders a snapshot; tokenName resolves token ids to names.
func toJSON(a *registry.Agent, tokenName func(string) string, decorators []Decorator) *Agent {
	j := toListJSON(a, tokenName, decorators)
	j.Identifying, j.NonIdentifying, j.lists = a.Identifying.Map(), a.NonIdentifying.Map(), false
	j.Attributes = nonNilMap(a.Attributes.Map())
	return j
}

// toListJSON is toJSON for listings, whose encoder (appendAgent) writes
// the reported lists from the snapshot's description.
func toListJSON(a *registry.Agent, tokenName func(string) string, decorators []Decorator) *Agent {
	j := &Agent{
		InstanceUID:    a.UID.String(),
		Kind:           string(a.Kind),
		Online:         a.Online,
		Credential:     Credential{Kind: a.Credential.Kind, ID: a.Credential.ID},
		lists:          true,
		identifying:    a.Identifying,
		nonIdentifying: a.NonIdentifying,
		attrs:          a.Attributes,
		Labels:         nonNilMap(a.Labels),
		Capabilities:   capabilityNames(a.Capabilities),
		Health:         health(a.Health()),
		FirstSeen:      a.FirstSeen,
		LastSeen:       a.LastSeen,
		Events:         make([]Event, 0, len(a.Events)),
	}
	if a.Credential.Kind == "token" {
		j.Credential.Name = tokenName(a.Credential.ID)
	}
	for _, e := range a.Events {
		j.Events = append(j.Events, Event{Time: e.Time, Type: e.Type, Message: e.Message})
	}
	if a.Kind == registry.KindUpdater {
		get := func(k string) *string {
			if v, ok := a.NonIdentifying.Get(k); ok {
				return &v
			}
			return nil
		}
		j.Updater = &Updater{
			InstallMode:          get(AttrInstallMode),
			ServerEndpoint:       get(AttrServerEndpoint),
			SupervisorService:    get(AttrSupervisorService),
			CollectorInstanceUID: get(AttrCollectorUID),
			ImageVersion:         get(AttrImageVersion),
			ImageDigest:          get(AttrImageDigest),
		}
	}
	for _, d := range decorators {
		d.Decorate(a, j)
	}
	return j
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// capabilityBits are the OpAMP capability bits in ascending order with
// their names without the enum prefix (ReportsStatus, AcceptsRemoteConfig, …).
var capabilityBits = func() []struct {
	bit  uint64
	name string
} {
	var out []struct {
		bit  uint64
		name string
	}
	for v, name := range protobufs.AgentCapabilities_name {
		if v > 0 {
			out = append(out, struct {
				bit  uint64
				name string
			}{uint64(v), strings.TrimPrefix(name, "AgentCapabilities_")})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].bit < out[j].bit })
	return out
}()

// capabilityNames lists the announced capabilities by their OpAMP names.
func capabilityNames(caps uint64) []string {
	out := []string{}
	for _, c := range capabilityBits {
		if caps&c.bit != 0 {
			out = append(out, c.name)
		}
	}
	return out
}

func health(h *protobufs.ComponentHealth) *Health {
	if h == nil {
		return nil
	}
	out := &Health{Healthy: h.Healthy, Status: h.Status, LastError: h.LastError,
		StartTime: unixNano(h.StartTimeUnixNano), StatusTime: unixNano(h.StatusTimeUnixNano)}
	if len(h.ComponentHealthMap) > 0 {
		out.Components = map[string]*Health{}
		for k, v := range h.ComponentHealthMap {
			out.Components[k] = health(v)
		}
	}
	return out
}

func unixNano(n uint64) *time.Time {
	if n == 0 {
		return nil
	}
	t := time.Unix(0, int64(n)).UTC()
	return &t
}
