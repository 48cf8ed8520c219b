package admin

import (
	"net/http"

	"github.com/myriarch/myriarch/server/registry"
)

// FilterFunc turns the value of a query parameter of GET /api/v1/agents
// into a predicate, or explains why the value is refused.
type FilterFunc func(value string) (func(a *registry.Agent) bool, error)

// AddFilter lets a feature filter agent listings by a query parameter
// (e.g. syncState=failed). Not safe once requests are served.
func (a *API) AddFilter(param string, f FilterFunc) {
	if a.filters == nil {
		a.filters = map[string]FilterFunc{}
	}
	a.filters[param] = f
}

// listFilters builds the predicates the request asks for; the message
// names the parameter it refuses.
func (a *API) listFilters(r *http.Request) ([]func(*registry.Agent) bool, string) {
	var out []func(*registry.Agent) bool
	q := r.URL.Query()
	for param, f := range a.filters {
		vals, ok := q[param]
		if !ok {
			continue
		}
		if len(vals) > 1 {
			return nil, param + " may be given once"
		}
		pred, err := f(vals[0])
		if err != nil {
			return nil, err.Error()
		}
		out = append(out, pred)
	}
	return out, ""
}

// keep drops the agents some predicate refuses, in place.
func keep(page []registry.Agent, preds []func(*registry.Agent) bool) []registry.Agent {
	if len(preds) == 0 {
		return page
	}
	out := page[:0]
next:
	for i := range page {
		for _, p := range preds {
			if !p(&page[i]) {
				continue next
			}
		}
		out = append(out, page[i])
	}
	return out
}
