package admincli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/myriarch/myriarch/internal/adminapi"
	"github.com/myriarch/myriarch/internal/adminclient"
	"github.com/myriarch/myriarch/internal/cmdline"
)

const auditAbout = `Prints the audit trail, newest first, following every page of the admin API:
a table, or --output json: one record per line (JSON lines, each with its
prev and hash) for a SIEM; --output yaml: one document per record.
"myriarchd audit verify" verifies the trail's chain of hashes; it exits 1
when a record does not follow.`

// AuditPageSize is how many records `audit list` asks for per request
// (the API's most).
var AuditPageSize = 1000

// ErrChainBroken is the error of a verification that finds a record that
// does not follow.
var ErrChainBroken = errors.New("the audit trail's chain is broken")

func (c *Commands) audit() *cmdline.Group {
	list := c.leaf("audit", "list", "[--actor NAME] [--action ACTION] [--target TARGET] [--outcome OUTCOME] [--since TIME] [--until TIME] [--limit N]",
		"print the audit trail, newest first", auditAbout, nil,
		func(cmd *cmdline.Command, client func() (*adminclient.Client, error)) action {
			output := outputFlag(cmd)
			actor := cmd.FS.String("actor", "", "only records whose actor is `NAME` (a user, an API key's id, admin-token)")
			act := cmd.FS.String("action", "", "only records whose action is `ACTION` (token.create, audit.cut, …)")
			target := cmd.FS.String("target", "", "only records whose target is `TARGET`")
			outcome := cmd.FS.String("outcome", "", "only records whose outcome is `OUTCOME`: ok, denied or error")
			since := cmd.FS.String("since", "", "only records at or after `TIME`: RFC 3339 (2025-06-01T12:00:00Z) or a duration before now (24h)")
			until := cmd.FS.String("until", "", "only records before `TIME`: RFC 3339 or a duration before now")
			limit := cmd.FS.Int("limit", 0, "print at most `N` records; 0: every record")
			return func(ctx context.Context, args []string) error {
				if err := wantArgs(args, 0, "no argument"); err != nil {
					return err
				}
				if err := checkFormat(*output); err != nil {
					return err
				}
				if *limit < 0 {
					return cmdline.Usagef("--limit must not be negative, got %d", *limit)
				}
				var p adminapi.ListAuditParams
				for _, f := range []struct {
					v   string
					dst **string
				}{{*actor, &p.Actor}, {*act, &p.Action}, {*target, &p.Target}} {
					if f.v != "" {
						v := f.v
						*f.dst = &v
					}
				}
				if *outcome != "" {
					o := adminapi.ListAuditParamsOutcome(*outcome)
					p.Outcome = &o
				}
				now := time.Now()
				for _, t := range []struct {
					name, v string
					dst     **time.Time
				}{{"since", *since, &p.Since}, {"until", *until, &p.Until}} {
					if t.v == "" {
						continue
					}
					at, err := cliTime(t.v, now)
					if err != nil {
						return cmdline.Usagef("--%s: %v", t.name, err)
					}
					*t.dst = &at
				}
				cl, err := client()
				if err != nil {
					return err
				}
				pr := &auditPrinter{w: out(cmd), format: *output}
				err = eachAuditPage(ctx, cl, p, *limit, pr.page)
				pr.flush()
				return err
			}
		})
	return &cmdline.Group{Name: "audit", Summary: "print the audit trail, newest first; verify its chain of hashes", Default: list,
		Leaves: []*cmdline.Leaf{list,
			c.simple("audit", "verify", "", "verify the trail's chain of hashes",
				"Verifies the audit trail's chain of hashes from its anchor; exits 1 when a record does not follow.", nil, "no argument",
				func(ctx context.Context, cl *adminclient.Client, _ []string) (answered, error) {
					r, err := cl.API.VerifyAuditWithResponse(ctx)
					if err != nil {
						return answered{}, err
					}
					if v := r.JSON200; !v.Ok {
						first, reason := int64(0), ""
						if v.FirstBad != nil {
							first = *v.FirstBad
						}
						if v.Reason != nil {
							reason = *v.Reason
						}
						return answered{raw: r.Body}, fmt.Errorf("%w: record %d does not follow: %s", ErrChainBroken, first, reason)
					}
					return answered{raw: r.Body}, nil
				}),
		}}
}

// cliTime reads --since or --until: an RFC 3339 time, or a duration
// before now; in UTC.
func cliTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2025-06-01T12:00:00Z) nor a duration before now (24h)", s)
	}
	return now.Add(-d).UTC(), nil
}

// eachAuditPage walks GET /api/v1/audit page by page (cursor), handing
// each page's records to fn, at most limit in all (0: every record).
func eachAuditPage(ctx context.Context, cl *adminclient.Client, p adminapi.ListAuditParams, limit int, fn func([]json.RawMessage) error) error {
	left := limit
	for {
		size := AuditPageSize
		if limit > 0 {
			size = min(size, left)
		}
		p.Limit = &size
		r, err := cl.API.ListAuditWithResponse(ctx, &p)
		if err != nil {
			return err
		}
		var page struct {
			Records []json.RawMessage `json:"records"`
		}
		if err := json.Unmarshal(r.Body, &page); err != nil {
			return fmt.Errorf("the server's answer: %w", err)
		}
		if err := fn(page.Records); err != nil {
			return err
		}
		left -= len(page.Records)
		next := r.JSON200.Next
		if next == nil || *next == "" || (limit > 0 && left <= 0) {
			return nil
		}
		if p.Cursor != nil && *p.Cursor == *next {
			return fmt.Errorf("the server answered the page after cursor %s with the same cursor", *next)
		}
		p.Cursor = next
	}
}

// auditPrinter prints records as JSON lines, YAML documents or a table
// (aligned a page at a time, so that no more than a page is held).
type auditPrinter struct {
	w      io.Writer
	format string
	tw     *tabwriter.Writer
	lines  bytes.Buffer
}

func (p *auditPrinter) page(recs []json.RawMessage) error {
	switch p.format {
	case FormatJSON:
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
	case FormatYAML:
		for _, r := range recs {
			if _, err := io.WriteString(p.w, "---\n"); err != nil {
				return err
			}
			if err := writeYAML(p.w, r); err != nil {
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
		var r adminapi.AuditRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("a record of the server: %w", err)
		}
		fmt.Fprintf(p.tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Id, stamp(r.Time), cell(r.Actor, 32),
			cell(string(r.Role), 10), cell(string(r.Via), 8), cell(r.Action, 32), cell(r.Target, 40), cell(string(r.Outcome), 8), cell(r.Source, 40), cell(r.Detail, 80))
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
