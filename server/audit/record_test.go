package audit_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/audit"
)

// Append refuses a record with an unknown outcome, via or role, without
// an action, or with the cuts' action, naming each wrong field, and
// stores nothing.
func TestAppendRefusesInvalid(t *testing.T) {
	cases := []struct {
		name   string
		change func(r *audit.Record)
		want   []string
	}{
		{"unknown outcome", func(r *audit.Record) { r.Outcome = "maybe" }, []string{`outcome "maybe" is not one of ok, denied, error`}},
		{"no outcome", func(r *audit.Record) { r.Outcome = "" }, []string{`outcome ""`}},
		{"unknown via", func(r *audit.Record) { r.Via = "carrier-pigeon" }, []string{`via "carrier-pigeon" is not one of api, console, cli, estate`}},
		{"upper-case via", func(r *audit.Record) { r.Via = "API" }, []string{`via "API"`}},
		{"unknown role", func(r *audit.Record) { r.Role = "root" }, []string{`role: unknown role "root"`}},
		{"no action", func(r *audit.Record) { r.Action = "" }, []string{"action is empty"}},
		{"the cuts' action", func(r *audit.Record) { r.Action = audit.ActionCut }, []string{"audit.cut is written by the trail's cuts only"}},
		{"everything wrong", func(r *audit.Record) { r.Outcome, r.Via, r.Action = "x", "y", "" }, []string{`outcome "x"`, `via "y"`, "action is empty"}},
	}
	st, _ := backends[0].open(t)
	tr := audit.New(audit.Options{Store: st})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := sample(1)
			c.change(&r)
			_, err := tr.Append(ctx, r)
			if !errors.Is(err, audit.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
	if v := verify(t, tr); v.Records != 0 {
		t.Fatalf("refused records were stored: %+v", v)
	}
	// What may be: no role, none, each role; each via and outcome.
	for i, role := range []string{"", "none", "viewer", "operator", "admin"} {
		r := sample(i)
		r.Role = role
		if _, err := tr.Append(ctx, r); err != nil {
			t.Errorf("role %q: %v", role, err)
		}
	}
}

// Every string is stored within its bound, valid UTF-8 without NUL, cut
// at a character's boundary with "…" when longer; the record appended is
// the record stored.
func TestAppendBoundsEveryString(t *testing.T) {
	st, _ := backends[0].open(t)
	tr := audit.New(audit.Options{Store: st})
	long := strings.Repeat("é", 3000) // 6000 bytes, 2 per character
	in := audit.Record{Actor: long, Role: "admin", Via: "api", Action: "x" + long, Target: long, Source: long, RequestID: long,
		Outcome: "ok", Detail: "\x00" + long}
	got, err := tr.Append(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		v    string
		max  int
	}{{"actor", got.Actor, audit.MaxActor}, {"action", got.Action, audit.MaxAction}, {"target", got.Target, audit.MaxTarget},
		{"source", got.Source, audit.MaxSource}, {"requestId", got.RequestID, audit.MaxRequestID}, {"detail", got.Detail, audit.MaxDetail}} {
		if len(f.v) > f.max || len(f.v) < f.max-4 || !utf8.ValidString(f.v) || !strings.HasSuffix(f.v, "…") {
			t.Errorf("%s: %d bytes, valid %v, ending %q; want at most %d, cut with …", f.name, len(f.v), utf8.ValidString(f.v), f.v[max(0, len(f.v)-6):], f.max)
		}
	}
	if got.Target != strings.Repeat("é", 126)+"…" || !strings.HasPrefix(got.Detail, "\uFFFDéé") {
		t.Errorf("target %q, detail starting %q", got.Target, got.Detail[:8])
	}
	invalid, err := tr.Append(ctx, audit.Record{Actor: "a\xffb\x00c", Via: "cli", Action: "x", Outcome: "ok"})
	if err != nil || invalid.Actor != "a\uFFFDb\uFFFDc" {
		t.Fatalf("invalid UTF-8 and NUL stored as %q (%v)", invalid.Actor, err)
	}
	p, err := tr.List(ctx, audit.Query{})
	if err != nil || len(p.Records) != 2 || p.Records[1] != got || p.Records[0] != invalid {
		t.Fatalf("stored %+v, appended %+v and %+v (%v)", p.Records, got, invalid, err)
	}
	if v := verify(t, tr); !v.OK || v.Records != 2 {
		t.Fatalf("%+v", v)
	}
}

// By fills the actor, role and via of a caller.
func TestRecordBy(t *testing.T) {
	c := access.Caller{Principal: access.Principal{Name: "alice", Kind: access.KindUser, Role: access.Operator}, Via: access.ViaConsole}
	r := audit.Record{Action: "fleet.pause"}.By(c)
	if r.Actor != "alice" || r.Role != "operator" || r.Via != "console" || r.Action != "fleet.pause" {
		t.Fatalf("%+v", r)
	}
}
