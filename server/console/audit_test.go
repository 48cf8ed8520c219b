package console_test

import (
	"context"
	"fmt"
	"html"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/audit"
)

// auditRecords appends n records through the server's trail: alice and
// bob in turn, outcomes in turn, a detail that tries to reorder the page.
func (e *env) auditRecords(n int) []audit.Record {
	e.t.Helper()
	var out []audit.Record
	for i := range n {
		r, err := e.srv.Audit().Append(context.Background(), audit.Record{Actor: []string{"alice", "bob"}[i%2], Role: "operator", Via: "console",
			Action: "fleet.pause", Target: fmt.Sprintf("fleet:edge-%d", i), Source: "192.0.2.7:5000", RequestID: fmt.Sprintf("req-%d", i),
			Outcome: audit.Outcomes[i%3], Detail: "paused \u202eevil"})
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// auditTrail is the whole trail so far, oldest first.
func (e *env) auditTrail() []audit.Record {
	e.t.Helper()
	p, err := e.srv.Audit().List(context.Background(), audit.Query{Limit: audit.MaxLimit})
	if err != nil || p.Next != "" {
		e.t.Fatalf("the trail: %v (next %q)", err, p.Next)
	}
	slices.Reverse(p.Records)
	return p.Records
}

var auditRowID = regexp.MustCompile(`<td><code title="hash [0-9a-f]{64}">([0-9]+)</code></td>`)

// auditIDs are the ids of the page's rows, in order.
func auditIDs(page string) []string {
	var ids []string
	for _, m := range auditRowID.FindAllStringSubmatch(section(page, "audit-result"), -1) {
		ids = append(ids, m[1])
	}
	return ids
}

var hrefOf = regexp.MustCompile(`<a href="([^"]+)"[^>]*aria-label="(Older|Newest) records"`)

// pagerLinks are the page's older and newest links ("" when absent).
func pagerLinks(page string) (older, newest string) {
	for _, m := range hrefOf.FindAllStringSubmatch(page, -1) {
		if m[2] == "Older" {
			older = html.UnescapeString(m[1])
		} else {
			newest = html.UnescapeString(m[1])
		}
	}
	return older, newest
}

// The audit page: records newest first a page at a time by the API's
// cursor, the API's filters (a datetime-local time read as UTC), each
// refusal shown with a 400, a detail's bidirectional override made
// visible, and the chain verified on demand.
func TestAuditPage(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	b.login(e.srv.AdminToken())
	// The login is the trail's first record, then 60 more.
	recs := append(e.auditTrail(), e.auditRecords(60)...)
	if len(recs) != 61 || recs[0].Action != "console.login" || recs[0].Actor != "admin-token" {
		t.Fatalf("the trail before the page: %+v", recs)
	}

	resp, page := b.do("GET", "/audit?per=50", nil)
	ids := auditIDs(page)
	if resp.StatusCode != 200 || len(ids) != 50 || ids[0] != "61" || ids[49] != "12" {
		t.Fatalf("first page: %d, ids %v", resp.StatusCode, ids)
	}
	if !strings.Contains(page, `<a href="/audit" aria-current="page">Audit</a>`) {
		t.Fatal("the navigation does not mark the audit page")
	}
	if !strings.Contains(html.UnescapeString(page), "paused ⟨U+202E⟩evil") || strings.Contains(page, "\u202e") {
		t.Fatal("a detail's bidirectional override reached the page")
	}
	older, newest := pagerLinks(page)
	if older == "" || newest != "" {
		t.Fatalf("first page links: older %q, newest %q", older, newest)
	}
	_, page = b.do("GET", older, nil)
	if ids := auditIDs(page); len(ids) != 11 || ids[0] != "11" || ids[10] != "1" {
		t.Fatalf("second page ids %v", ids)
	}
	if older, newest = pagerLinks(page); older != "" || newest != "/audit?per=50" {
		t.Fatalf("second page links: older %q, newest %q", older, newest)
	}

	since := recs[39].Time.Format(time.RFC3339Nano)
	filtered := []struct {
		query string
		want  func(r audit.Record) bool
	}{
		{"actor=alice&outcome=denied", func(r audit.Record) bool { return r.Actor == "alice" && r.Outcome == "denied" }},
		{"target=fleet:edge-7", func(r audit.Record) bool { return r.Target == "fleet:edge-7" }},
		{"since=" + url.QueryEscape(since), func(r audit.Record) bool { return r.ID >= recs[39].ID }},
		{"until=" + url.QueryEscape(recs[0].Time.UTC().Format("2006-01-02T15:04")), func(audit.Record) bool { return false }},
	}
	for _, f := range filtered {
		var want []string
		for i := len(recs) - 1; i >= 0; i-- {
			if f.want(recs[i]) {
				want = append(want, fmt.Sprint(recs[i].ID))
			}
		}
		resp, page := b.do("GET", "/audit?"+f.query, nil)
		if got := auditIDs(page); resp.StatusCode != 200 || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: %d, ids %v, want %v", f.query, resp.StatusCode, got, want)
		}
	}

	for _, bad := range []struct{ query, want string }{
		{"since=tomorrow", "Since: not a time such as 2025-06-01T12:00 (UTC): tomorrow"},
		{"outcome=maybe", "query parameter outcome: value is not one of the allowed values"},
		{"cursor=zzz", "cursor is not a cursor of this trail"},
	} {
		resp, page := b.do("GET", "/audit?"+bad.query, nil)
		if resp.StatusCode != 400 || !strings.Contains(html.UnescapeString(page), bad.want) {
			t.Errorf("%s: %d, want 400 saying %q\n%s", bad.query, resp.StatusCode, bad.want, page)
		}
	}

	_, page = b.do("GET", "/audit?verify=1&actor=bob", nil)
	if v := section(page, "audit-verify"); !strings.Contains(v, "Verified: all 61 records follow") {
		t.Fatalf("verification:\n%s", v)
	}
	if ids := auditIDs(page); len(ids) != 30 {
		t.Fatalf("the verification dropped the filter: %d rows", len(ids))
	}
}
