package console

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"sort"

	"github.com/myriarch/myriarch/server/registry"
)

type summaryDoc struct {
	Agents            map[string]registry.Count `json:"agents"`
	CollectorVersions map[string]registry.Count `json:"collectorVersions"`
	Offers            map[string]int            `json:"offers"`
	Pairings          map[string]int            `json:"pairings"`
	Configs           map[string]int            `json:"configs"`
	ConfigWarnings    *struct {
		Collectors int `json:"collectors"`
	} `json:"configWarnings"`
}

type kindRow struct {
	Kind                   string
	Total, Online, Offline int
	Link, OfflineLink      string
}

type barRow struct {
	Label         string
	Total, Online int
	Max           int
	Link          string
}

type alertRow struct {
	Label string
	N     int
	Link  string
}

type overviewData struct {
	Agents       int
	Kinds        []kindRow
	Versions     []barRow
	Offers       []barRow
	Alerts       []alertRow
	Fleets       []fleetView
	Estate       *estateDoc
	EstateErrors []string
}

// overview: agents by kind and online state, collectors by version, the
// counts an operator acts on, fleets with their rollouts (paused first),
// and the estate in force.
func (c *Console) overview(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	var sum summaryDoc
	if err := c.api.get(ctx, "/api/v1/summary", &sum); err != nil {
		c.fail(w, r, s, http.StatusBadGateway, err.Error())
		return
	}
	d := overviewData{}
	for _, k := range sortedKeys(sum.Agents) {
		n := sum.Agents[k]
		d.Agents += n.Total
		d.Kinds = append(d.Kinds, kindRow{Kind: k, Total: n.Total, Online: n.Online, Offline: n.Total - n.Online,
			Link: agentsLink("kind", k), OfflineLink: agentsLink("kind", k, "online", "false")})
	}
	max := 0
	for _, n := range sum.CollectorVersions {
		max = maxInt(max, n.Total)
	}
	versions := sortedKeys(sum.CollectorVersions)
	slices.SortStableFunc(versions, func(a, b string) int { return sum.CollectorVersions[b].Total - sum.CollectorVersions[a].Total })
	for _, v := range versions {
		n := sum.CollectorVersions[v]
		label := v
		if v == "" {
			label = "(not reported)"
		}
		d.Versions = append(d.Versions, barRow{Label: label, Total: n.Total, Online: n.Online, Max: max,
			Link: agentsLink("kind", "collector", "version", v)})
	}
	offerTotal := 0
	for _, n := range sum.Offers {
		offerTotal += n
	}
	for _, st := range sortedKeys(sum.Offers) {
		d.Offers = append(d.Offers, barRow{Label: st, Total: sum.Offers[st], Max: offerTotal, Link: agentsLink("offerState", st)})
	}
	d.Alerts = append(d.Alerts,
		alertRow{Label: "ambiguous pairings", N: sum.Pairings["ambiguous"], Link: "/pairings"},
		alertRow{Label: "failed offers", N: sum.Offers["failed"], Link: agentsLink("offerState", "failed")})
	if sum.Configs != nil {
		d.Alerts = append(d.Alerts, alertRow{Label: "failed configs", N: sum.Configs["failed"], Link: agentsLink("syncState", "failed")})
	} else if c.opts.API.HasFilter("syncState") {
		d.Alerts = append(d.Alerts, alertRow{Label: "failed configs", N: c.count(ctx, "syncState=failed"), Link: agentsLink("syncState", "failed")})
	}
	if sum.ConfigWarnings != nil {
		d.Alerts = append(d.Alerts, alertRow{Label: "configs with warnings", N: sum.ConfigWarnings.Collectors, Link: agentsLink("configWarnings", "true")})
	}
	fl, err := c.fleetList(ctx)
	if err != nil {
		c.fail(w, r, s, http.StatusBadGateway, err.Error())
		return
	}
	d.Fleets = fl
	var est estateDoc
	switch err := c.api.get(ctx, "/api/v1/estate", &est); {
	case err == nil:
		d.Estate = &est
		for _, p := range est.Errors {
			d.EstateErrors = append(d.EstateErrors, p.Error())
		}
	case !notFound(err):
		d.EstateErrors = append(d.EstateErrors, "estate: "+err.Error())
	}
	c.render(w, r, http.StatusOK, "overview", view{Title: "Overview", Nav: "overview", CSRF: s.csrf, Events: "/events", Data: d})
}

// count asks the API how many agents a filter selects (0 when it cannot say).
func (c *Console) count(ctx context.Context, query string) int {
	var l listDoc
	if err := c.api.get(ctx, "/api/v1/agents?limit=1&offset=0&events=false&"+query, &l); err != nil {
		return 0
	}
	return l.Total
}

// agentsLink is the agent list filtered by the given parameter pairs.
func agentsLink(kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return "/agents?" + q.Encode()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
