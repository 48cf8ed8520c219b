package configs

import (
	"net/http"

	"github.com/myriarch/myriarch/server/admin"
)

// FleetVariables is GET /api/v1/fleets/{name}/variables: what the render
// contexts of a fleet's collectors hold, so a Blueprint's references can
// be checked against the fleet as it is (blueprint-check
// --context-from-fleet). Variables counts, for each variable name, the
// members that have it (in their context, or in a mapping of a dynamic
// provider); values are never shown.
type FleetVariables struct {
	Fleet     string         `json:"fleet"`
	Blueprint string         `json:"blueprint"`
	Members   int            `json:"members"`
	Variables map[string]int `json:"variables"`
}

// fleetVariables answers GET /api/v1/fleets/{name}/variables.
func (e *Engine) fleetVariables(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.fleets[name]
	if f == nil && e.est != nil {
		for _, def := range e.est.Fleets {
			if def.Name == name && def.Config != nil {
				f = newFleetRollout(def)
			}
		}
	}
	if f == nil {
		admin.WriteError(w, http.StatusNotFound, "no fleet "+name+" with a configuration")
		return
	}
	out := FleetVariables{Fleet: name, Blueprint: f.def.Config.Blueprint, Variables: map[string]int{}}
	for _, rec := range e.records {
		if rec.fleet != name || !rec.view.Known() {
			continue
		}
		out.Members++
		in, _ := e.inputOf(rec)
		has := make(map[string]bool, len(in.Context))
		for k := range in.Context {
			has[k] = true
		}
		for _, ms := range in.Dynamic {
			for _, m := range ms {
				for k := range m.Vars {
					has[k] = true
				}
			}
		}
		for k := range has {
			out.Variables[k]++
		}
	}
	admin.WriteJSON(w, http.StatusOK, out)
}
