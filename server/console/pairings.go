package console

import (
	"net/http"
)

type pairingDoc struct {
	InstanceUID string   `json:"instanceUid"`
	State       string   `json:"state"`
	Updater     *string  `json:"updater"`
	Collector   *string  `json:"collector"`
	Reason      string   `json:"reason"`
	Claimants   []string `json:"claimants"`
}

type pairingsDoc struct {
	Collectors []pairingDoc `json:"collectors"`
	Updaters   []pairingDoc `json:"updaters"`
}

type pairingsData struct {
	Counts    []alertRow
	Ambiguous []pairingDoc
	Unlinked  []pairingDoc
}

// maxPairingRows bounds each table of the pairings page.
const maxPairingRows = 1000

// pairings: ambiguous pairings first, with their claimants, then updaters
// that are not linked and why, then counts of the rest.
func (c *Console) pairings(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	var amb, unl pairingsDoc
	var sum summaryDoc
	for path, out := range map[string]any{"/api/v1/pairings?state=ambiguous": &amb, "/api/v1/pairings?state=unlinked": &unl, "/api/v1/summary": &sum} {
		if err := c.api.get(ctx, path, out); err != nil {
			c.failAPI(w, r, s, err)
			return
		}
	}
	d := pairingsData{Ambiguous: amb.Collectors, Unlinked: unl.Updaters}
	d.Ambiguous = d.Ambiguous[:min(len(d.Ambiguous), maxPairingRows)]
	d.Unlinked = d.Unlinked[:min(len(d.Unlinked), maxPairingRows)]
	for _, k := range []struct{ key, label string }{{"ambiguous", "ambiguous collectors"}, {"linked", "linked collectors"},
		{"no_updater", "collectors without an updater"}, {"unlinkedUpdaters", "updaters not linked"}} {
		d.Counts = append(d.Counts, alertRow{Label: k.label, N: sum.Pairings[k.key]})
	}
	c.render(w, r, http.StatusOK, "pairings", view{Title: "Pairings", Nav: "pairings", CSRF: s.csrf, Events: "/events", Data: d})
}
