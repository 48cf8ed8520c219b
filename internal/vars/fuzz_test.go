package vars

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse checks the parser never panics, that a successful parse renders
// deterministically, and that a failed parse points inside the template.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "plain", "${HOSTNAME}", "$${x}", "$$", "cost $5", "${env:HOME}", "${env:PORT:-4317}",
		"${a|'b'}", `${"x\"y"|a.b.c}`, "${'}|:,*{😀'}", "${ local.port }", "${host.ip.0}",
		"${a..b}", "${}", "${a||b}", "${a'b'}", "${'abc}", "${a ${b}}", "${a", "${x} ${",
		`${'C:\logs'}`, "$$${a}", "${ünï.ключ}", "${a|}", "${|a}", "x${local.list}y",
	} {
		f.Add(s)
	}
	data := testData(f)
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := Parse(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q): error %T is not a *ParseError", s, err)
			}
			if pe.Pos < 0 || pe.Pos > len(s) {
				t.Fatalf("Parse(%q): position %d outside the template", s, pe.Pos)
			}
			if pe.Pos < len(s) && !strings.HasPrefix(s[pe.Pos:], pe.Char) {
				t.Fatalf("Parse(%q): char %q is not at byte %d", s, pe.Char, pe.Pos)
			}
			return
		}
		if !strings.Contains(s, "${") && tm.HasReferences() {
			t.Fatalf("Parse(%q): references without ${", s)
		}
		for _, r := range tm.References() {
			if !strings.Contains(s, r.Source) || len(r.Alts) == 0 {
				t.Fatalf("Parse(%q): reference %q not from the source", s, r.Source)
			}
			for _, a := range r.Alts {
				if !a.Const && len(a.Path) < 2 {
					t.Fatalf("Parse(%q): variable %v lacks its provider", s, a.Path)
				}
			}
		}
		v1, ok1, err1 := tm.Render(data.ContextSet())
		v2, ok2, err2 := tm.Render(data.ContextSet())
		if ok1 != ok2 || (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("Render(%q) not deterministic: %v/%v %v/%v", s, ok1, ok2, err1, err2)
		}
		if err1 == nil && !Equal(v1, v2) {
			t.Fatalf("Render(%q) not deterministic: %#v vs %#v", s, v1, v2)
		}
		// Text without '$' is never changed.
		if !strings.Contains(s, "$") && (err1 != nil || v1 != s) {
			t.Fatalf("Render(%q) = %#v, %v; want the text unchanged", s, v1, err1)
		}
		// Parsing again gives the same template.
		tm2, err := Parse(s)
		if err != nil || len(tm2.parts) != len(tm.parts) || tm2.whole != tm.whole {
			t.Fatalf("Parse(%q) not deterministic", s)
		}
		// A template without references renders to its text parts, and
		// valid UTF-8 stays valid.
		if err1 == nil && utf8.ValidString(s) {
			if str, ok := v1.(string); ok && !utf8.ValidString(str) {
				t.Fatalf("Render(%q) produced invalid UTF-8 %q", s, str)
			}
		}
	})
}
