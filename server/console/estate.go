package console

import (
	"net/http"
	"strings"
	"time"

	"github.com/myriarch/myriarch/internal/blueprint"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/plan"
)

// estateData is the estate page: the estate in force and, for those who
// may reload it, the plan of a reload (or of the revision asked for).
type estateData struct {
	Revision string
	LoadedAt *time.Time
	Errors   []estate.Problem
	Findings []blueprint.Finding
	// Planned: the plan below is shown (the principal may see
	// configurations); Asked is the revision asked for ("" for what a
	// reload would load: the estate directory as it is).
	Planned   bool
	Asked     string
	Plan      plan.Plan
	PlanError string
	Fleets    []fleetPlanView
	Reload    bool // the principal may reload
}

type fleetPlanView struct {
	plan.Fleet
	Bodies []bodyView
}

type bodyView struct {
	plan.Body
	Lines []diffTextLine
}

// diffTextLine is a line of a unified diff's text: Class is add, del, ctx
// or hunk.
type diffTextLine struct {
	Class, Text string
}

// estatePage shows the estate in force, and the plan of a reload: what
// the estate directory, as it is now (for a clean Git work tree, its
// HEAD), would change; ?revision=REV plans that Git revision instead.
func (c *Console) estatePage(w http.ResponseWriter, r *http.Request, s *session) {
	var st struct {
		Revision *string             `json:"revision"`
		LoadedAt *time.Time          `json:"loadedAt"`
		Errors   []estate.Problem    `json:"errors"`
		Findings []blueprint.Finding `json:"findings"`
	}
	if err := c.api.get(r.Context(), "/api/v1/estate", &st); err != nil {
		c.failAPI(w, r, s, err)
		return
	}
	d := estateData{LoadedAt: st.LoadedAt, Errors: st.Errors, Findings: st.Findings,
		Planned: may(r.Context(), "POST /api/v1/estate/plan", ""), Reload: may(r.Context(), "POST /estate/reload", ""),
		Asked: strings.TrimSpace(r.URL.Query().Get("revision"))}
	if st.Revision != nil {
		d.Revision = *st.Revision
	}
	status := http.StatusOK
	if d.Planned {
		var body any
		if d.Asked != "" {
			body = map[string]string{"revision": d.Asked}
		}
		b, err := c.api.call(r.Context(), http.MethodPost, "/api/v1/estate/plan", body)
		if err == nil {
			err = jsonInto(b, &d.Plan)
		}
		if err != nil {
			d.PlanError = err.Error()
			if ae, ok := err.(*apiError); ok && ae.Status < 500 {
				status = ae.Status
			}
		}
		for _, f := range d.Plan.Fleets {
			if len(f.Changed) == 0 && len(f.Warnings) == 0 && len(f.Errors) == 0 && f.Version == nil {
				continue
			}
			fv := fleetPlanView{Fleet: f}
			for _, b := range f.Bodies {
				fv.Bodies = append(fv.Bodies, bodyView{Body: b, Lines: diffTextLines(b.Diff)})
			}
			d.Fleets = append(d.Fleets, fv)
		}
	}
	c.render(w, r, status, "estate", view{Title: "Estate", Nav: "estate", CSRF: s.csrf, Flash: c.flash(r, s), Data: d})
}

// diffTextLines splits a unified diff's text into classed lines (its two
// header lines left out: the page says what is compared).
func diffTextLines(diff string) []diffTextLine {
	var out []diffTextLine
	for _, l := range strings.Split(strings.TrimSuffix(diff, "\n"), "\n") {
		switch {
		case l == "", strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "+++ "):
		case strings.HasPrefix(l, "@@"):
			out = append(out, diffTextLine{Class: "hunk", Text: l})
		case l[0] == '+':
			out = append(out, diffTextLine{Class: "add", Text: l})
		case l[0] == '-':
			out = append(out, diffTextLine{Class: "del", Text: l})
		default:
			out = append(out, diffTextLine{Class: "ctx", Text: l})
		}
	}
	return out
}

// estateReload reloads the estate (POST /api/v1/estate/reload).
func (c *Console) estateReload(w http.ResponseWriter, r *http.Request, s *session) {
	if _, err := c.api.call(r.Context(), http.MethodPost, "/api/v1/estate/reload", nil); err != nil {
		c.redirectDone(w, r, s, "/estate", "The estate was not reloaded: "+err.Error()+". The plan below lists its problems.")
		return
	}
	c.redirectDone(w, r, s, "/estate", "Estate reloaded.")
}
