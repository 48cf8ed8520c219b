package console

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

type stateN struct {
	State string
	N     int
}

type waveView struct {
	waveDoc
	Done   int
	States []stateN
}

// extraView is a fleet member the console knows no template for (for
// example a config rollout): its scalar fields and, when it has waves, a
// table of them.
type extraView struct {
	Label   string
	Fields  []field
	Columns []string
	Waves   [][]field
}

type fleetView struct {
	fleetDoc
	// Paused: a rollout of the fleet is paused; Running: one is not.
	Paused, Running  bool
	HasPackage       bool
	Waves            []waveView
	ConfigWaves      []waveView
	Extras           []extraView
	MembersLink      string
	FailedLink       string
	ConfigFailedLink string
	Selector         []field
}

// fleetList reads the fleets, paused ones first, then by name.
func (c *Console) fleetList(ctx context.Context) ([]fleetView, error) {
	var doc struct {
		Fleets []fleetDoc `json:"fleets"`
	}
	if err := c.api.get(ctx, "/api/v1/fleets", &doc); err != nil {
		return nil, err
	}
	out := make([]fleetView, 0, len(doc.Fleets))
	for _, f := range doc.Fleets {
		v := fleetView{fleetDoc: f, HasPackage: f.Rollout.State != "none" && f.Rollout.State != "",
			MembersLink: agentsLink("fleet", f.Name), FailedLink: agentsLink("fleet", f.Name, "offerState", "failed"),
			ConfigFailedLink: agentsLink("fleet", f.Name, "syncState", "failed")}
		for _, st := range []string{f.Rollout.State, configState(f.Config)} {
			switch st {
			case "paused":
				v.Paused = true
			case "running", "complete":
				v.Running = true
			}
		}
		if f.Config != nil {
			for _, w := range f.Config.Waves {
				wv := waveView{waveDoc: waveDoc{Wave: w.Wave, Total: w.Total, Open: w.Open, UpToDate: w.InSync, Failed: w.Failed, States: w.States},
					Done: w.InSync + w.Failed + w.States["none"]}
				for _, st := range sortedKeys(w.States) {
					if w.States[st] > 0 {
						wv.States = append(wv.States, stateN{st, w.States[st]})
					}
				}
				v.ConfigWaves = append(v.ConfigWaves, wv)
			}
		}
		for _, k := range sortedKeys(f.Selector) {
			v.Selector = append(v.Selector, field{Key: k, Label: k, Value: f.Selector[k]})
		}
		for _, w := range f.Rollout.Waves {
			wv := waveView{waveDoc: w, Done: w.UpToDate + w.Failed}
			for _, st := range sortedKeys(w.States) {
				wv.States = append(wv.States, stateN{st, w.States[st]})
			}
			v.Waves = append(v.Waves, wv)
		}
		for _, k := range sortedKeys(f.Extra) {
			v.Extras = append(v.Extras, extraOf(k, f.Extra[k]))
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

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return num(n) + " " + noun + "s"
}

func configState(c *configRolloutDoc) string {
	if c == nil {
		return ""
	}
	return c.State
}

func extraOf(key string, v any) extraView {
	ev := extraView{Label: key}
	m, ok := v.(map[string]any)
	if !ok {
		s, null := scalar(v)
		ev.Fields = []field{{Key: key, Label: key, Value: s, Null: null}}
		return ev
	}
	waves, _ := m["waves"].([]any)
	rest := map[string]any{}
	for k, x := range m {
		if k != "waves" {
			rest[k] = x
		}
	}
	ev.Fields = fields(rest, nil, nil)
	for i, w := range waves {
		wm, ok := w.(map[string]any)
		if !ok {
			continue
		}
		if i == 0 {
			for _, f := range fields(wm, [][2]string{{"wave", "wave"}}, nil) {
				ev.Columns = append(ev.Columns, f.Key)
			}
		}
		var row []field
		for _, col := range ev.Columns {
			s, null := scalar(wm[col])
			row = append(row, field{Key: col, Label: col, Value: s, Null: null})
		}
		ev.Waves = append(ev.Waves, row)
	}
	return ev
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
		Flash: fleetFlash(r.URL.Query()), Data: fleetsData{Fleets: fl}})
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
	q := url.Values{"done": {op}, "fleet": {name}}
	if op == "retry" || op == "config-retry" {
		var res struct {
			Retried int `json:"retried"`
		}
		if jsonInto(body, &res) == nil {
			q.Set("n", strconv.Itoa(res.Retried))
		}
	}
	http.Redirect(w, r, "/fleets?"+q.Encode(), http.StatusSeeOther)
}

// fleetFlash says what the last action did; the messages are fixed, the
// fleet name and count only fill them in.
func fleetFlash(q url.Values) string {
	name := displayText(q.Get("fleet"), shortText, false)
	switch q.Get("done") {
	case "pause":
		return "Rollouts of fleet " + name + " paused."
	case "resume":
		return "Rollouts of fleet " + name + " resumed."
	case "retry":
		n, _ := strconv.Atoi(q.Get("n"))
		return "Failed offers of fleet " + name + " retried: " + plural(n, "collector") + "."
	case "config-retry":
		n, _ := strconv.Atoi(q.Get("n"))
		return "Failed configurations of fleet " + name + " retried: " + plural(n, "agent") + "."
	}
	return ""
}
