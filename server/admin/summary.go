package admin

import (
	"net/http"

	"github.com/myriarch/myriarch/server/registry"
)

// AddSummary adds a feature's part to GET /api/v1/summary under name: fn
// returns a JSON-encodable value (e.g. offer counts by state). Not safe
// once requests are served.
func (a *API) AddSummary(name string, fn func() any) {
	if a.summaries == nil {
		a.summaries = map[string]func() any{}
	}
	a.summaries[name] = fn
}

// summary answers GET /api/v1/summary: agents by kind and collectors by
// version, each with how many are online, plus every feature's part.
func (a *API) summary(w http.ResponseWriter, _ *http.Request) {
	s := a.d.Registry.Summarize()
	kinds := map[string]registry.Count{}
	for k, c := range s.ByKind {
		kinds[string(k)] = c
	}
	out := map[string]any{"agents": kinds, "collectorVersions": s.CollectorVersions}
	for name, fn := range a.summaries {
		out[name] = fn()
	}
	WriteJSON(w, http.StatusOK, out)
}
