package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/myriarch/myriarch/server/configs"
	"github.com/myriarch/myriarch/server/offers"
	"github.com/myriarch/myriarch/server/registry"
)

// Agent list paging.
const (
	defaultPerPage = 50
	defaultSort    = "host"
)

var perPageChoices = []int{25, 50, 100, 200}

// listFilterParams are the list's filters, each passed to the API as is.
var listFilterParams = []string{"kind", "online", "fleet", "version", "offerState", "syncState", "attr", "q"}

// listParams is the agent list's state, all of it in the URL.
type listParams struct {
	Filters map[string]string
	Sort    string
	Page    int
	Per     int
}

func parseListParams(q url.Values) listParams {
	p := listParams{Filters: map[string]string{}, Sort: defaultSort, Page: 1, Per: defaultPerPage}
	for _, k := range listFilterParams {
		if v := strings.TrimSpace(q.Get(k)); v != "" {
			p.Filters[k] = v
		}
	}
	if v := q.Get("sort"); v != "" {
		p.Sort = v
	}
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n >= 1 && n <= 1<<20 {
		p.Page = n
	}
	if n, err := strconv.Atoi(q.Get("per")); err == nil {
		for _, c := range perPageChoices {
			if n == c {
				p.Per = n
			}
		}
	}
	return p
}

// values is the list's URL query with some parameters replaced ("" drops one).
func (p listParams) values(set ...string) url.Values {
	q := url.Values{}
	for k, v := range p.Filters {
		q.Set(k, v)
	}
	if p.Sort != defaultSort {
		q.Set("sort", p.Sort)
	}
	if p.Page != 1 {
		q.Set("page", strconv.Itoa(p.Page))
	}
	if p.Per != defaultPerPage {
		q.Set("per", strconv.Itoa(p.Per))
	}
	for i := 0; i+1 < len(set); i += 2 {
		if set[i+1] == "" {
			q.Del(set[i])
		} else {
			q.Set(set[i], set[i+1])
		}
	}
	return q
}

func (p listParams) link(set ...string) string {
	if e := p.values(set...).Encode(); e != "" {
		return "/agents?" + e
	}
	return "/agents"
}

// apiQuery is the admin API listing for this page.
func (p listParams) apiQuery() string {
	q := url.Values{}
	for k, v := range p.Filters {
		q.Set(k, v)
	}
	q.Set("sort", p.Sort)
	q.Set("limit", strconv.Itoa(p.Per))
	q.Set("offset", strconv.Itoa((p.Page-1)*p.Per))
	q.Set("events", "false")
	return "/api/v1/agents?" + q.Encode()
}

type agentRow struct {
	UID, Host, Kind, Version string
	Online                   bool
	LastSeen                 time.Time
	Fleet, Offer, Sync       string
	Pairing                  string
}

func rowOf(a *agentDoc) agentRow {
	r := agentRow{UID: a.InstanceUID, Host: a.Attributes["host.name"], Kind: a.Kind, Version: a.Attributes["service.version"],
		Online: a.Online, LastSeen: a.LastSeen}
	r.Fleet, _ = str(a.Assignment, "fleet")
	r.Sync, _ = str(a.Assignment, "syncState")
	r.Offer, _ = str(a.Offer, "state")
	r.Pairing, _ = str(a.Pairing, "state")
	return r
}

type option struct {
	Value, Label string
	Selected     bool
}

type column struct {
	Label    string
	Link     string // sort link; "" when the column does not sort
	AriaSort string // ascending, descending or none
}

type filterField struct {
	Name, Label string
	Options     []option // a select; nil: a text input
	Value       string
	Placeholder string
}

type listData struct {
	Filters       []filterField
	PerOptions    []option
	Columns       []column
	Rows          []agentRow
	Total         int
	From, To      int
	Page, Pages   int
	First, Prev   string
	Next, Last    string
	ShowSync      bool
	ClearLink     string
	FilterSummary string
}

var sortColumns = []struct{ label, key string }{
	{"Host", "host"}, {"Instance UID", "uid"}, {"Kind", "kind"}, {"Online", "online"}, {"Version", "version"},
	{"Fleet", ""}, {"Offer", ""}, {"Sync", ""}, {"Last seen", "lastSeen"},
}

// agents is the agent list: server-side paging, sorting and filtering
// through GET /api/v1/agents, one page of agents read per request.
func (c *Console) agents(w http.ResponseWriter, r *http.Request, s *session) {
	p := parseListParams(r.URL.Query())
	d := listData{ShowSync: c.opts.API.HasFilter("syncState"), ClearLink: "/agents"}
	status, errMsg := http.StatusOK, ""
	var doc listDoc
	if err := c.api.get(r.Context(), p.apiQuery(), &doc); err != nil {
		status, errMsg = http.StatusBadRequest, err.Error()
		if ae, ok := err.(*apiError); ok && ae.Status != http.StatusBadRequest {
			status = http.StatusBadGateway
		}
	}
	for i := range doc.Agents {
		d.Rows = append(d.Rows, rowOf(&doc.Agents[i]))
	}
	d.Total = doc.Total
	d.Pages = max(1, (d.Total+p.Per-1)/p.Per)
	d.Page = p.Page
	if len(d.Rows) > 0 {
		d.From = (p.Page-1)*p.Per + 1
		d.To = d.From + len(d.Rows) - 1
	}
	if p.Page > 1 {
		d.First = p.link("page", "")
		d.Prev = p.link("page", strconv.Itoa(min(p.Page-1, d.Pages)))
	}
	if p.Page < d.Pages {
		d.Next = p.link("page", strconv.Itoa(p.Page+1))
		d.Last = p.link("page", strconv.Itoa(d.Pages))
	}
	for _, col := range sortColumns {
		cl := column{Label: col.label}
		if col.key != "" {
			next, aria := col.key, "none"
			switch p.Sort {
			case col.key:
				next, aria = "-"+col.key, "ascending"
			case "-" + col.key:
				aria = "descending"
			}
			cl.Link, cl.AriaSort = p.link("sort", next, "page", ""), aria
		}
		d.Columns = append(d.Columns, cl)
	}
	if !d.ShowSync {
		d.Columns = removeColumn(d.Columns, "Sync")
	}
	d.Filters = c.filterFields(r.Context(), p, d.ShowSync)
	for _, n := range perPageChoices {
		d.PerOptions = append(d.PerOptions, option{Value: strconv.Itoa(n), Label: strconv.Itoa(n), Selected: n == p.Per})
	}
	c.render(w, r, status, "agents", view{Title: "Agents", Nav: "agents", CSRF: s.csrf, Events: "/events", Error: errMsg, Data: d})
}

func removeColumn(cols []column, label string) []column {
	out := cols[:0]
	for _, c := range cols {
		if c.Label != label {
			out = append(out, c)
		}
	}
	return out
}

var (
	kindOptions   = []string{string(registry.KindCollector), string(registry.KindUpdater), string(registry.KindBridge), string(registry.KindUnknown)}
	syncOptions   = []string{configs.SyncNone, configs.SyncInSync, configs.SyncPending, configs.SyncFailed, configs.SyncDrift}
	onlineOptions = [][2]string{{"true", "online"}, {"false", "offline"}}
)

func selectOf(values []string, current string) []option {
	out := []option{{Value: "", Label: "any", Selected: current == ""}}
	found := current == ""
	for _, v := range values {
		out = append(out, option{Value: v, Label: strings.ReplaceAll(v, "_", " "), Selected: v == current})
		found = found || v == current
	}
	if !found {
		out = append(out, option{Value: current, Label: current, Selected: true})
	}
	return out
}

func (c *Console) filterFields(ctx context.Context, p listParams, sync bool) []filterField {
	online := []option{{Value: "", Label: "any", Selected: p.Filters["online"] == ""}}
	for _, o := range onlineOptions {
		online = append(online, option{Value: o[0], Label: o[1], Selected: p.Filters["online"] == o[0]})
	}
	var fleetNames []string
	if fl, err := c.fleetList(ctx); err == nil {
		for _, f := range fl {
			fleetNames = append(fleetNames, f.Name)
		}
	}
	out := []filterField{
		{Name: "q", Label: "Host name or UID", Value: p.Filters["q"], Placeholder: "contains…"},
		{Name: "kind", Label: "Kind", Options: selectOf(kindOptions, p.Filters["kind"])},
		{Name: "online", Label: "Online", Options: online},
		{Name: "fleet", Label: "Fleet", Options: selectOf(fleetNames, p.Filters["fleet"])},
		{Name: "version", Label: "Version", Value: p.Filters["version"], Placeholder: "0.149.0"},
		{Name: "offerState", Label: "Offer state", Options: selectOf(offers.States, p.Filters["offerState"])},
	}
	if sync {
		out = append(out, filterField{Name: "syncState", Label: "Sync state", Options: selectOf(syncOptions, p.Filters["syncState"])})
	}
	return append(out, filterField{Name: "attr", Label: "Attribute or label", Value: p.Filters["attr"], Placeholder: "site.id=007 or labels.wave=1"})
}
