package console

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/myriarch/myriarch/server/configs"
	"github.com/myriarch/myriarch/server/offers"
)

type stateN struct {
	State string
	N     int
}

// waveView is a wave of a package or configuration rollout: Done counts
// the members that no longer hold back the next wave.
type waveView struct {
	offers.WaveJSON
	Done   int
	States []stateN
}

type fleetView struct {
	offers.FleetJSON
	// ConfigRollout is the configuration rollout (nil without one).
	ConfigRollout *configs.RolloutJSON
	// Paused: a rollout of the fleet is paused; Running: one is not.
	Paused, Running bool
	// Operate: the operator may pause, resume and retry this fleet.
	Operate          bool
	HasPackage       bool
	Waves            []waveView
	ConfigWaves      []waveView
	MembersLink      string
	FailedLink       string
	ConfigFailedLink string
	Selector         []field
}

// fleetList reads the fleets, paused ones first, then by name.
func (c *Console) fleetList(ctx context.Context) ([]fleetView, error) {
	var doc struct {
		Fleets []offers.FleetJSON `json:"fleets"`
	}
	if err := c.api.get(ctx, "/api/v1/fleets", &doc); err != nil {
		return nil, err
	}
	out := make([]fleetView, 0, len(doc.Fleets))
	for _, f := range doc.Fleets {
		v := fleetView{FleetJSON: f, HasPackage: f.Rollout.State != "none" && f.Rollout.State != "",
			MembersLink: agentsLink("fleet", f.Name), FailedLink: agentsLink("fleet", f.Name, "offerState", "failed"),
			ConfigFailedLink: agentsLink("fleet", f.Name, "syncState", "failed"), Operate: may(ctx, "POST /fleets/{name}/{op}", f.Name)}
		if f.Config != nil {
			var cr configs.RolloutJSON
			if b, err := json.Marshal(f.Config); err == nil && json.Unmarshal(b, &cr) == nil {
				v.ConfigRollout = &cr
			}
		}
		for _, st := range []string{f.Rollout.State, configState(v.ConfigRollout)} {
			switch st {
			case "paused":
				v.Paused = true
			case "running", "complete":
				v.Running = true
			}
		}
		for _, k := range sortedKeys(f.Selector) {
			v.Selector = append(v.Selector, field{Key: k, Label: k, Value: f.Selector[k]})
		}
		for _, w := range f.Rollout.Waves {
			v.Waves = append(v.Waves, waveOf(w, w.UpToDate+w.Failed))
		}
		if cr := v.ConfigRollout; cr != nil {
			for _, w := range cr.Waves {
				v.ConfigWaves = append(v.ConfigWaves, waveOf(offers.WaveJSON{Wave: w.Wave, Total: w.Total, Open: w.Open,
					UpToDate: w.InSync, Failed: w.Failed, States: w.States}, w.InSync+w.Failed+w.States[configs.SyncNone]))
			}
		}
		out = append(out, v)
	}
	slices.SortStableFunc(out, func(a, b fleetView) int {
		if a.Paused != b.Paused {
			if a.Paused {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

func waveOf(w offers.WaveJSON, done int) waveView {
	v := waveView{WaveJSON: w, Done: done}
	for _, st := range sortedKeys(w.States) {
		if w.States[st] > 0 {
			v.States = append(v.States, stateN{st, w.States[st]})
		}
	}
	return v
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return num(n) + " " + noun + "s"
}

func configState(c *configs.RolloutJSON) string {
	if c == nil {
		return ""
	}
	return c.State
}

type fleetsData struct {
	Fleets []fleetView
}

func (c *Console) fleets(w http.ResponseWriter, r *http.Request, s *session) {
	fl, err := c.fleetList(r.Context())
	if err != nil {
		c.fail(w, r, s, http.StatusBadGateway, err.Error())
		return
	}
	c.render(w, r, http.StatusOK, "fleets", view{Title: "Fleets", Nav: "fleets", CSRF: s.csrf, Events: "/events",
		Flash: c.flash(r, s), Data: fleetsData{Fleets: fl}})
}

// fleetOps maps a console action on a fleet to its admin API route.
var fleetOps = map[string]string{
	"pause":        "/pause",
	"resume":       "/resume",
	"retry":        "/retry",
	"config-retry": "/config/retry",
}

// fleetAction pauses or resumes a fleet's rollout, or retries its failed
// offers, through the admin API.
func (c *Console) fleetAction(w http.ResponseWriter, r *http.Request, s *session) {
	name, op := r.PathValue("name"), r.PathValue("op")
	route, ok := fleetOps[op]
	if !ok {
		c.fail(w, r, s, http.StatusNotFound, "No such fleet action: "+op)
		return
	}
	body, err := c.api.call(r.Context(), http.MethodPost, "/api/v1/fleets/"+url.PathEscape(name)+route, nil)
	if err != nil {
		c.failAPI(w, r, s, err)
		return
	}
	n := 0
	if op == "retry" || op == "config-retry" {
		var res struct {
			Retried int `json:"retried"`
		}
		if jsonInto(body, &res) == nil {
			n = res.Retried
		}
	}
	c.redirectDone(w, r, s, "/fleets", fleetDone(op, name, n))
}

// fleetDone says what an action on a fleet did: n is the agents retried.
func fleetDone(op, fleet string, n int) string {
	name := displayText(fleet, shortText, false)
	switch op {
	case "pause":
		return "Rollouts of fleet " + name + " paused."
	case "resume":
		return "Rollouts of fleet " + name + " resumed."
	case "retry":
		return "Failed offers of fleet " + name + " retried: " + plural(n, "collector") + "."
	default: // config-retry
		return "Failed configurations of fleet " + name + " retried: " + plural(n, "agent") + "."
	}
}
