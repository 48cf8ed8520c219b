package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/myriarch/myriarch/server/audit"
)

// The audit trail's page: the API's filters, newest first, a page at a
// time by the API's cursor, and the verification of the chain on demand.

const defaultAuditPer = 100

var auditPerChoices = []int{50, 100, 200, 500}

// auditTextFilters are passed to the API as typed; since and until are
// read as UTC times (a datetime-local input's value, or RFC 3339).
var auditTextFilters = []struct{ name, label, placeholder string }{
	{"actor", "Actor", "alice, admin-token"},
	{"action", "Action", "token.create"},
	{"target", "Target", ""},
}

// auditParams is the page's state, all of it in the URL.
type auditParams struct {
	Filters map[string]string // actor, action, target, outcome, since, until
	Per     int
	Cursor  string
	Verify  bool
}

func parseAuditParams(q url.Values) auditParams {
	p := auditParams{Filters: map[string]string{}, Per: defaultAuditPer, Cursor: q.Get("cursor"), Verify: q.Get("verify") == "1"}
	for _, k := range []string{"actor", "action", "target", "outcome", "since", "until"} {
		if v := strings.TrimSpace(q.Get(k)); v != "" {
			p.Filters[k] = v
		}
	}
	if n, err := strconv.Atoi(q.Get("per")); err == nil {
		for _, c := range auditPerChoices {
			if n == c {
				p.Per = n
			}
		}
	}
	return p
}

// link is the page's URL with some parameters replaced ("" drops one);
// the verification is never carried over.
func (p auditParams) link(set ...string) string {
	q := url.Values{}
	for k, v := range p.Filters {
		q.Set(k, v)
	}
	if p.Per != defaultAuditPer {
		q.Set("per", strconv.Itoa(p.Per))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	for i := 0; i+1 < len(set); i += 2 {
		if set[i+1] == "" {
			q.Del(set[i])
		} else {
			q.Set(set[i], set[i+1])
		}
	}
	if e := q.Encode(); e != "" {
		return "/audit?" + e
	}
	return "/audit"
}

// apiQuery is GET /api/v1/audit for this page; a time the page cannot
// read is an error naming its field.
func (p auditParams) apiQuery() (string, error) {
	q := url.Values{}
	for k, v := range p.Filters {
		if k == "since" || k == "until" {
			t, err := consoleTime(v)
			if err != nil {
				return "", errors.New(strings.ToUpper(k[:1]) + k[1:] + ": " + err.Error())
			}
			v = t.Format(time.RFC3339Nano)
		}
		q.Set(k, v)
	}
	q.Set("limit", strconv.Itoa(p.Per))
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	return "/api/v1/audit?" + q.Encode(), nil
}

// consoleTime reads a datetime-local value (2025-06-01T12:00, seconds
// optional) as UTC, or an RFC 3339 time.
func consoleTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errors.New("not a time such as 2025-06-01T12:00 (UTC): " + displayText(s, 64, false))
}

type auditField struct {
	Name, Label, Type, Value, Placeholder string
	Options                               []option // a select; nil: an input
}

type auditRow struct {
	audit.Record
	Short string // the time to the second
}

type verifyView struct {
	OK       bool
	Records  int
	FirstBad int64
	Reason   string
}

type auditData struct {
	Filters       []auditField
	PerOptions    []option
	Rows          []auditRow
	Newest, Older string
	Verification  *verifyView
	VerifyLink    string
}

// audit shows a page of the trail through GET /api/v1/audit and, when
// asked, GET /api/v1/audit/verify.
func (c *Console) audit(w http.ResponseWriter, r *http.Request, s *session) {
	p := parseAuditParams(r.URL.Query())
	d := auditData{VerifyLink: p.link("verify", "1")}
	status, errMsg := http.StatusOK, ""
	path, err := p.apiQuery()
	var page audit.Page
	if err == nil {
		err = c.api.get(r.Context(), path, &page)
	}
	if err != nil {
		status, errMsg = http.StatusBadRequest, err.Error()
		if ae, ok := err.(*apiError); ok && ae.Status != http.StatusBadRequest {
			status = http.StatusBadGateway
		}
	}
	for _, rec := range page.Records {
		d.Rows = append(d.Rows, auditRow{Record: rec, Short: rec.Time.UTC().Format("2006-01-02 15:04:05")})
	}
	if page.Next != "" {
		d.Older = p.link("cursor", page.Next)
	}
	if p.Cursor != "" {
		d.Newest = p.link("cursor", "")
	}
	if p.Verify {
		var v audit.Verification
		if err := c.api.get(r.Context(), "/api/v1/audit/verify", &v); err != nil {
			c.failAPI(w, r, s, err)
			return
		}
		d.Verification = &verifyView{OK: v.OK, Records: int(v.Records), FirstBad: v.FirstBad, Reason: v.Reason}
	}
	d.Filters = auditFields(p)
	for _, n := range auditPerChoices {
		d.PerOptions = append(d.PerOptions, option{Value: strconv.Itoa(n), Label: strconv.Itoa(n), Selected: n == p.Per})
	}
	c.render(w, r, status, "audit", view{Title: "Audit trail", Nav: "audit", CSRF: s.csrf, Error: errMsg, Data: d})
}

func auditFields(p auditParams) []auditField {
	var out []auditField
	for _, f := range auditTextFilters {
		out = append(out, auditField{Name: f.name, Label: f.label, Type: "search", Value: p.Filters[f.name], Placeholder: f.placeholder})
	}
	out = append(out, auditField{Name: "outcome", Label: "Outcome", Options: selectOf(audit.Outcomes, p.Filters["outcome"])})
	for _, f := range [][2]string{{"since", "From (UTC)"}, {"until", "Before (UTC)"}} {
		out = append(out, auditField{Name: f[0], Label: f[1], Type: "datetime-local", Value: p.Filters[f[0]]})
	}
	return out
}
