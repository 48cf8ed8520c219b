package console

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// The admin API's JSON as the console reads it. Features decorate agents
// and fleets with objects the console reads generically (pairing,
// assignment, offer, config rollout): a field it does not know is still
// shown, and a field a server does not have is simply absent.

type agentDoc struct {
	InstanceUID    string            `json:"instanceUid"`
	Kind           string            `json:"kind"`
	Online         bool              `json:"online"`
	Credential     credentialDoc     `json:"credential"`
	Identifying    map[string]string `json:"identifying"`
	NonIdentifying map[string]string `json:"nonIdentifying"`
	Attributes     map[string]string `json:"attributes"`
	Labels         map[string]string `json:"labels"`
	LabelSources   map[string]string `json:"labelSources"`
	Capabilities   []string          `json:"capabilities"`
	Health         *healthDoc        `json:"health"`
	FirstSeen      time.Time         `json:"firstSeen"`
	LastSeen       time.Time         `json:"lastSeen"`
	Events         []eventDoc        `json:"events"`
	Updater        map[string]any    `json:"updater"`
	Pairing        map[string]any    `json:"pairing"`
	Assignment     map[string]any    `json:"assignment"`
	Offer          map[string]any    `json:"offer"`
}

type credentialDoc struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

type healthDoc struct {
	Healthy    bool                  `json:"healthy"`
	Status     string                `json:"status"`
	LastError  string                `json:"lastError"`
	StartTime  *time.Time            `json:"startTime"`
	StatusTime *time.Time            `json:"statusTime"`
	Components map[string]*healthDoc `json:"components"`
}

type eventDoc struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Message string    `json:"message"`
}

type listDoc struct {
	Agents []agentDoc `json:"agents"`
	Total  int        `json:"total"`
}

type fleetDoc struct {
	Name          string            `json:"name"`
	Priority      int               `json:"priority"`
	Selector      map[string]string `json:"selector"`
	Package       string            `json:"package"`
	TargetVersion string            `json:"targetVersion"`
	Rollout       rolloutDoc        `json:"rollout"`
	// Config is the configuration rollout (null for a fleet without one).
	Config *configRolloutDoc `json:"config"`
	// Extra holds members the console has no template for (shown as they are).
	Extra map[string]any `json:"-"`
}

type rolloutDoc struct {
	State       string    `json:"state"`
	PausedBy    string    `json:"pausedBy"`
	Failures    int       `json:"failures"`
	MaxFailures *int      `json:"maxFailures"`
	Waves       []waveDoc `json:"waves"`
}

type configRolloutDoc struct {
	Blueprint   string          `json:"blueprint"`
	Bridges     bool            `json:"bridges"`
	State       string          `json:"state"`
	PausedBy    string          `json:"pausedBy"`
	Failures    int             `json:"failures"`
	MaxFailures *int            `json:"maxFailures"`
	Waves       []configWaveDoc `json:"waves"`
}

type configWaveDoc struct {
	Wave   string         `json:"wave"`
	Total  int            `json:"total"`
	Open   bool           `json:"open"`
	InSync int            `json:"inSync"`
	Failed int            `json:"failed"`
	States map[string]int `json:"states"`
}

type waveDoc struct {
	Wave     string         `json:"wave"`
	Total    int            `json:"total"`
	Open     bool           `json:"open"`
	UpToDate int            `json:"upToDate"`
	Failed   int            `json:"failed"`
	States   map[string]int `json:"states"`
}

// fleetKeys are the fleet members fleetDoc reads itself.
var fleetKeys = map[string]bool{"name": true, "priority": true, "selector": true, "package": true, "targetVersion": true,
	"rollout": true, "config": true}

func (f *fleetDoc) UnmarshalJSON(b []byte) error {
	type plain fleetDoc
	if err := json.Unmarshal(b, (*plain)(f)); err != nil {
		return err
	}
	var all map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for k, v := range all {
		if !fleetKeys[k] {
			if f.Extra == nil {
				f.Extra = map[string]any{}
			}
			f.Extra[k] = v
		}
	}
	return nil
}

// field is one labelled value of a generic object.
type field struct {
	Key   string
	Label string
	Value string
	Null  bool
	Mono  bool // hashes, UIDs
}

// str reads a string member ("" and false when absent, null or not a string).
func str(m map[string]any, key string) (string, bool) {
	s, ok := m[key].(string)
	return s, ok
}

// obj reads an object member.
func obj(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	return o
}

// scalar renders a JSON value for display; objects and arrays as compact JSON.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, false
	case bool:
		return strconv.FormatBool(x), false
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), false
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x), false
		}
		return string(b), false
	}
}

// fields lists the members of m: those in order first with their labels,
// then every other member in key order. Members whose key is in mono are
// shown in a fixed-width font.
func fields(m map[string]any, order [][2]string, mono map[string]bool) []field {
	var out []field
	seen := map[string]bool{}
	for _, kl := range order {
		v, ok := m[kl[0]]
		if !ok {
			continue
		}
		seen[kl[0]] = true
		s, null := scalar(v)
		out = append(out, field{Key: kl[0], Label: kl[1], Value: s, Null: null, Mono: mono[kl[0]]})
	}
	var rest []string
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		s, null := scalar(m[k])
		out = append(out, field{Key: k, Label: k, Value: s, Null: null, Mono: mono[k]})
	}
	return out
}
