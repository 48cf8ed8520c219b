package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/myriarch/myriarch/internal/adminclient"
	"github.com/myriarch/myriarch/server/audit"
)

const auditAbout = `Prints the audit trail, newest first, following every page of the admin API:
a table, or with --json one record per line (JSON lines, each with its prev
and hash) for a SIEM. "myriarchd audit verify" verifies the trail's chain
of hashes; it exits 1 when a record does not follow.`

// auditPageSize is how many records `audit` asks for per request (the
// API's most).
var auditPageSize = 1000

func auditCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "verify" {
		return auditVerify(args[1:], stdout, stderr)
	}
	c := newCommand("audit", "audit [--actor NAME] [--action ACTION] [--target TARGET] [--outcome OUTCOME]\n"+
		"                       [--since TIME] [--until TIME] [--limit N] [--json] [flags]\n       myriarchd audit verify [flags]", auditAbout)
	client := clientFlags(c.fs)
	filters := map[string]*string{
		"actor":   c.fs.String("actor", "", "only records whose actor is `NAME` (a user, an API key's id, admin-token)"),
		"action":  c.fs.String("action", "", "only records whose action is `ACTION` (token.create, audit.cut, …)"),
		"target":  c.fs.String("target", "", "only records whose target is `TARGET`"),
		"outcome": c.fs.String("outcome", "", "only records whose outcome is `OUTCOME`: ok, denied or error"),
	}
	since := c.fs.String("since", "", "only records at or after `TIME`: RFC 3339 (2025-06-01T12:00:00Z) or a duration before now (24h)")
	until := c.fs.String("until", "", "only records before `TIME`: RFC 3339 or a duration before now")
	limit := c.fs.Int("limit", 0, "print at most `N` records; 0: every record")
	asJSON := c.fs.Bool("json", false, "print JSON lines: one record per line, as the API writes it")
	if code, done := c.parseFlags(args, stdout, stderr); done {
		return code
	}
	if *limit < 0 {
		return c.usageError(stderr, "--limit must not be negative, got %d", *limit)
	}
	q := url.Values{}
	for name, v := range filters {
		if *v != "" {
			q.Set(name, *v)
		}
	}
	now := time.Now()
	for _, t := range []struct{ name, v string }{{"since", *since}, {"until", *until}} {
		if t.v == "" {
			continue
		}
		at, err := cliTime(t.v, now)
		if err != nil {
			return c.usageError(stderr, "--%s: %v", t.name, err)
		}
		q.Set(t.name, at)
	}
	cl, err := client()
	if err != nil {
		fmt.Fprintln(stderr, "myriarchd audit:", err)
		return 1
	}
	out := &auditPrinter{w: stdout, json: *asJSON}
	if err := eachAuditPage(cl, q, *limit, out.page); err != nil {
		out.flush()
		fmt.Fprintln(stderr, "myriarchd audit:", err)
		return 1
	}
	out.flush()
	return 0
}

// cliTime reads --since or --until: an RFC 3339 time, or a duration
// before now; it returns the time as the API takes it.
func cliTime(s string, now time.Time) (string, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC().Format(time.RFC3339Nano), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return "", fmt.Errorf("%q is neither an RFC 3339 time (2025-06-01T12:00:00Z) nor a duration before now (24h)", s)
	}
	return now.Add(-d).UTC().Format(time.RFC3339Nano), nil
}

// eachAuditPage walks GET /api/v1/audit page by page (cursor), handing
// each page's records to fn, at most limit in all (0: every record).
func eachAuditPage(c *adminclient.Client, q url.Values, limit int, fn func([]json.RawMessage) error) error {
	left := limit
	cursor := ""
	for {
		size := auditPageSize
		if limit > 0 {
			size = min(size, left)
		}
		q.Set("limit", strconv.Itoa(size))
		var page struct {
			Records []json.RawMessage `json:"records"`
			Next    string            `json:"next"`
		}
		if err := c.Do("GET", "/api/v1/audit?"+q.Encode(), nil, &page); err != nil {
			return err
		}
		if err := fn(page.Records); err != nil {
			return err
		}
		left -= len(page.Records)
		if page.Next == "" || (limit > 0 && left <= 0) {
			return nil
		}
		if page.Next == cursor {
			return fmt.Errorf("the server answered the page after cursor %s with the same cursor", cursor)
		}
		cursor = page.Next
		q.Set("cursor", cursor)
	}
}

// auditPrinter prints records as JSON lines or as a table (aligned a page
// at a time, so that no more than a page is held).
type auditPrinter struct {
	w     io.Writer
	json  bool
	tw    *tabwriter.Writer
	lines bytes.Buffer
}

func (p *auditPrinter) page(recs []json.RawMessage) error {
	if p.json {
		for _, r := range recs {
			p.lines.Reset()
			if err := json.Compact(&p.lines, r); err != nil {
				return fmt.Errorf("a record of the server: %w", err)
			}
			p.lines.WriteByte('\n')
			if _, err := p.w.Write(p.lines.Bytes()); err != nil {
				return err
			}
		}
		return nil
	}
	if p.tw == nil {
		p.tw = tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(p.tw, "ID\tTIME\tACTOR\tROLE\tVIA\tACTION\tTARGET\tOUTCOME\tSOURCE\tDETAIL")
	}
	for _, raw := range recs {
		var r audit.Record
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("a record of the server: %w", err)
		}
		fmt.Fprintf(p.tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Time.UTC().Format(time.RFC3339), cell(r.Actor, 32),
			cell(r.Role, 10), cell(r.Via, 8), cell(r.Action, 32), cell(r.Target, 40), cell(r.Outcome, 8), cell(r.Source, 40), cell(r.Detail, 80))
	}
	return p.tw.Flush()
}

func (p *auditPrinter) flush() {
	if p.tw != nil {
		p.tw.Flush()
	}
}

// cell is s for a table's cell: control characters (a terminal's escape
// sequences, line breaks, tabs) as spaces, at most max characters, "-"
// when empty.
func cell(s string, max int) string {
	if s == "" {
		return "-"
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("…")
			break
		}
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

func auditVerify(args []string, stdout, stderr io.Writer) int {
	c := newCommand("audit verify", "audit verify [flags]",
		"Verifies the audit trail's chain of hashes from its anchor and prints the result as JSON;\nexits 1 when a record does not follow.")
	client := clientFlags(c.fs)
	if code, done := c.parseFlags(args, stdout, stderr); done {
		return code
	}
	var v struct {
		OK       bool   `json:"ok"`
		Records  int64  `json:"records"`
		FirstBad int64  `json:"firstBad,omitempty"`
		Reason   string `json:"reason,omitempty"`
	}
	if _, ok := c.call(stderr, client, "GET", "/api/v1/audit/verify", nil, &v); !ok {
		return 1
	}
	printJSON(stdout, v)
	if !v.OK {
		fmt.Fprintf(stderr, "myriarchd audit verify: record %d does not follow: %s\n", v.FirstBad, v.Reason)
		return 1
	}
	return 0
}
