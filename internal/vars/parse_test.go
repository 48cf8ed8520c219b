package vars

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// testData is the context every value test evaluates against.
func testData(t testing.TB) *Data {
	t.Helper()
	ctx := map[string]any{
		"env": map[string]any{"HOME": "/root", "HOSTNAME": "box", "EMPTY": ""},
		"local": map[string]any{
			"port":     int64(8080),
			"ratio":    0.75,
			"big":      1e21,
			"two":      2.0,
			"small":    0.000001,
			"tiny":     1e-7,
			"neg":      int64(-3),
			"on":       true,
			"off":      false,
			"nothing":  nil,
			"list":     []any{int64(1), "a<b>&", map[string]any{"z": int64(1), "a": int64(2)}},
			"map":      map[string]any{"b": "x", "a": []any{true, nil}},
			"app.name": "dotted",
			"uni":      "héllo wörld",
			"ünï":      map[string]any{"ключ": "значение", "键": "值", "a-b_c/d": "ok", "0": "zero"},
			"deep":     map[string]any{"l": []any{map[string]any{"x": "in-list"}}},
			"floats":   []any{2.0, 1e21, 0.75, 1e-7, int64(3)},
		},
		"host":   map[string]any{"ip": []any{"10.0.0.1", "10.0.0.2"}, "name": "h1"},
		"agent":  map[string]any{"id": "agent-1"},
		"custom": map[string]any{"X": "from-custom"},
	}
	d, err := NewData(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func jsonOf(t testing.TB, v any) string {
	t.Helper()
	s, err := compactJSON(v)
	if err != nil {
		t.Fatalf("encoding %v: %v", v, err)
	}
	return s
}

// TestRenderValue covers every syntax, lookup, typing and formatting rule
// through the value front end.
func TestRenderValue(t *testing.T) {
	data := testData(t)
	tests := []struct {
		name, tmpl string
		want       string // JSON of the result; "null" means removed
	}{
		// references and text
		{"plain text", "hello", `"hello"`},
		{"empty string", "", `""`},
		{"default provider", "${HOSTNAME}", `"box"`},
		{"explicit provider", "${env.HOSTNAME}", `"box"`},
		{"interpolated", "host=${HOSTNAME}:${local.port}", `"host=box:8080"`},
		{"adjacent refs", "${HOSTNAME}${HOSTNAME}", `"boxbox"`},
		{"lone dollar", "cost $5", `"cost $5"`},
		{"double dollar alone", "$$", `"$$"`},
		{"dollar at end", "a$", `"a$"`},
		{"dollar dollar text", "$$x", `"$$x"`},
		{"escape", "$${HOSTNAME}", `"${HOSTNAME}"`},
		{"escape keeps body as written", "$${ a | 'b' }", `"${ a | 'b' }"`},
		{"escape then ref", "$${x}=${HOSTNAME}", `"${x}=box"`},
		{"escape whole string is text", "$${local.port}", `"${local.port}"`},
		{"triple dollar", "$$${HOSTNAME}", `"$${HOSTNAME}"`},
		{"brace text", "{} } {", `"{} } {"`},
		{"substituted text not rescanned", "${local.rec}", `"${HOSTNAME}"`},

		// collector pass-through
		{"collector env", "${env:HOME}", `"${env:HOME}"`},
		{"collector file", "${file:/etc/x}", `"${file:/etc/x}"`},
		{"collector default", "${env:PORT:-4317}", `"${env:PORT:-4317}"`},
		{"collector in text", "x ${env:HOME} ${HOSTNAME}", `"x ${env:HOME} box"`},
		{"collector with spaces", "${ env: HOME }", `"${ env: HOME }"`},
		{"quoted colon is constant", "${'a:b'}", `"a:b"`},
		{"colon after quoted constant", "${nope|'x'}:${HOSTNAME}", `"x:box"`},
		{"escaped collector", "$${env:HOME}", `"${env:HOME}"`},

		// alternatives and constants
		{"constant", "${'lit'}", `"lit"`},
		{"double-quoted constant", `${"lit"}`, `"lit"`},
		{"fallback constant", "${nope.x|'dflt'}", `"dflt"`},
		{"fallback variable", "${nope.x|HOSTNAME}", `"box"`},
		{"first wins", "${HOSTNAME|'dflt'}", `"box"`},
		{"constant stops", "${'a'|HOSTNAME}", `"a"`},
		{"constant then unknown", "${'a'|nope.x}", `"a"`},
		{"spaces around alternatives", "${  nope.x  |  'd'  }", `"d"`},
		{"tabs and newlines", "${\tnope.x\n|\n'd'\t}", `"d"`},
		{"constant with specials", "${'}|:,*{ 😀'}", `"}|:,*{ 😀"`},
		{"constant with dollar brace", "${'${x}'}", `"${x}"`},
		{"escaped quotes", `${'it\'s'}`, `"it's"`},
		{"escaped double in double", `${"say \"hi\""}`, `"say \"hi\""`},
		{"escaped other quote kind", `${'\"'}`, `"\""`},
		{"escaped backslash", `${'a\\b'}`, `"a\\b"`},
		{"other backslash literal", `${'C:\logs'}`, `"C:\\logs"`},
		{"backslash n literal", `${'a\nb'}`, `"a\\nb"`},
		{"backslash outside quotes", `C:\${HOSTNAME}`, `"C:\\box"`},
		{"empty constant", "${''}", `""`},
		{"constant whole is string", "${'8080'}", `"8080"`},

		// existence counts
		{"empty string exists", "${EMPTY|'d'}", `""`},
		{"null exists", "${local.nothing|'d'}", `null`},
		{"false exists", "${local.off|'d'}", `false`},

		// lookup
		{"dotted provider key nested", "${local.app.name}", `"dotted"`},
		{"list index", "${host.ip.0}", `"10.0.0.1"`},
		{"list index 1", "${host.ip.1}", `"10.0.0.2"`},
		{"list out of range", "${host.ip.2|'none'}", `"none"`},
		{"map in list", "${local.deep.l.0.x}", `"in-list"`},
		{"scalar step", "${local.port.x|'none'}", `"none"`},
		{"string step", "${host.name.0|'none'}", `"none"`},
		{"non-numeric list index", "${host.ip.first|'none'}", `"none"`},
		{"unicode names", "${local.ünï.ключ}/${local.ünï.键}", `"значение/值"`},
		{"dash slash underscore", "${local.ünï.a-b_c/d}", `"ok"`},
		{"digit map key", "${local.ünï.0}", `"zero"`},
		{"case sensitive", "${env.home|'no'}", `"no"`},
		{"unknown provider", "${nope.x|'no'}", `"no"`},
		{"provider root not addressable", "${local|'no'}", `"no"`},

		// whole-value typing
		{"int keeps type", "${local.port}", `8080`},
		{"spaces keep type", "${ local.port }", `8080`},
		{"float keeps type", "${local.ratio}", `0.75`},
		{"bool keeps type", "${local.on}", `true`},
		{"list keeps type", "${local.list}", `[1,"a<b>&",{"a":2,"z":1}]`},
		{"map keeps type", "${local.map}", `{"a":[true,null],"b":"x"}`},
		{"null whole", "${local.nothing}", `null`},
		{"leading space is text", " ${local.port}", `" 8080"`},
		{"trailing space is text", "${local.port} ", `"8080 "`},

		// interpolation formatting
		{"int text", "p=${local.port}", `"p=8080"`},
		{"negative int", "n=${local.neg}", `"n=-3"`},
		{"float text", "r=${local.ratio}", `"r=0.75"`},
		{"big float", "${local.big}!", `"1e+21!"`},
		{"whole float 2.0", "${local.two}!", `"2!"`},
		{"small float", "${local.small}!", `"0.000001!"`},
		{"tiny float", "${local.tiny}!", `"1e-7!"`},
		{"bool text", "${local.on}/${local.off}", `"true/false"`},
		{"null text", "a${local.nothing}b", `"ab"`},
		{"list text sorted compact no html escape", "x${local.list}", `"x[1,\"a<b>&\",{\"a\":2,\"z\":1}]"`},
		{"map text", "x${local.map}", `"x{\"a\":[true,null],\"b\":\"x\"}"`},
		{"unicode text", "${local.uni}", `"héllo wörld"`},
		{"floats inside interpolated JSON", "f=${local.floats}", `"f=[2,1e+21,0.75,1e-7,3]"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := data
			if tc.name == "substituted text not rescanned" {
				var err error
				d, err = NewData(map[string]any{"local": map[string]any{"rec": "${HOSTNAME}"}}, nil)
				if err != nil {
					t.Fatal(err)
				}
			}
			v, ok, err := Engine{}.RenderValue(tc.tmpl, d)
			if err != nil {
				t.Fatalf("RenderValue(%q): %v", tc.tmpl, err)
			}
			got := jsonOf(t, v)
			if got != tc.want {
				t.Errorf("RenderValue(%q) = %s, want %s", tc.tmpl, got, tc.want)
			}
			if !ok && v != nil {
				t.Errorf("RenderValue(%q): removed but value %v", tc.tmpl, v)
			}
		})
	}
}

func TestRenderValueNullRemovesOnlyWhole(t *testing.T) {
	data := testData(t)
	_, ok, err := Engine{}.RenderValue("${local.nothing}", data)
	if err != nil || ok {
		t.Fatalf("whole null: ok=%v err=%v, want removed", ok, err)
	}
	// A constant never removes, even when it is the whole string.
	v, ok, err := Engine{}.RenderValue("${nope.x|''}", data)
	if err != nil || !ok || v != "" {
		t.Fatalf("constant: %v %v %v", v, ok, err)
	}
}

func TestDefaultProviderConfigurable(t *testing.T) {
	data := testData(t)
	v, _, err := Engine{DefaultProvider: "custom"}.RenderValue("${X}", data)
	if err != nil || v != "from-custom" {
		t.Fatalf("got %v, %v", v, err)
	}
	if err := (Engine{DefaultProvider: "bad name"}).Validate(); err == nil {
		t.Fatal("invalid default provider accepted")
	}
}

func TestMissing(t *testing.T) {
	data := testData(t)
	for _, tmpl := range []string{"${nope}", "${ unknown.key }", "a ${nope.x|other.y} b", "${host.ip.9}", "${HOSTNAME} ${env.NOPE}"} {
		_, _, err := Engine{}.RenderValue(tmpl, data)
		var me *MissingError
		if !errors.As(err, &me) {
			t.Errorf("%q: got %v, want a missing error", tmpl, err)
			continue
		}
		if !strings.HasPrefix(me.Reference, "${") || !strings.Contains(tmpl, me.Reference) {
			t.Errorf("%q: reference %q is not the reference as written", tmpl, me.Reference)
		}
		if KindOf(err) != KindMissing || !strings.Contains(err.Error(), me.Reference) {
			t.Errorf("%q: kind %s message %q", tmpl, KindOf(err), err)
		}
	}
}

// TestParseErrors checks each class of malformed template reports the byte
// position and the offending character.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, tmpl string
		pos        int
		char       string
		msg        string
	}{
		{"empty body", "${}", 2, "}", "empty reference body"},
		{"blank body", "${  }", 4, "}", "empty reference body"},
		{"empty alternative middle", "${a||b}", 4, "|", "empty alternative"},
		{"leading bar", "${|a}", 2, "|", "empty alternative"},
		{"trailing bar", "${a|}", 4, "}", "empty alternative"},
		{"trailing bar space", "${a| }", 5, "}", "empty alternative"},
		{"whitespace in name", "${a b}", 3, " ", "whitespace inside a name"},
		{"whitespace in dotted name", "${a. b}", 4, " ", "whitespace inside a name"},
		{"quote in middle", "${a'b'}", 3, "'", "quote in the middle of an alternative"},
		{"quote after constant", `${'a'"b"}`, 5, `"`, "quote in the middle of an alternative"},
		{"text after constant", "${'a' b}", 6, "b", "unexpected character"},
		{"unterminated quote", "${'abc}", 2, "'", "unterminated quote"},
		{"unterminated double quote", `x ${"abc}`, 4, `"`, "unterminated quote"},
		{"escaped closing quote", `${'abc\'}`, 2, "'", "unterminated quote"},
		{"double dot", "${a..b}", 4, ".", "empty name segment"},
		{"leading dot", "${.a}", 2, ".", "empty name segment"},
		{"trailing dot", "${a.}", 3, ".", "empty name segment"},
		{"bracket", "${host.ip[0]}", 9, "[", "character not allowed in a name"},
		{"at sign", "${a@b}", 3, "@", "character not allowed in a name"},
		{"open brace", "${a{b}", 3, "{", "character not allowed in a name"},
		{"star", "${*}", 2, "*", "character not allowed in a name"},
		{"emoji name", "${😀}", 2, "😀", "character not allowed in a name"},
		{"nested", "${a ${b}}", 4, "$", `nested "${"`},
		{"nested in alternative", "${a|${b}}", 4, "$", `nested "${"`},
		{"unclosed", "${a", 0, "$", `unclosed "${"`},
		{"unclosed after valid", "${a} ${b", 5, "$", `unclosed "${"`},
		{"unclosed escape", "$${a", 1, "$", `unclosed "${"`},
		{"bad escape body", "$${a..b}", 5, ".", "empty name segment"},
		{"bad body after constant parsed", "${'a'|b..c}", 8, ".", "empty name segment"},
		{"unicode position is in bytes", "é${a@}", 5, "@", "character not allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.tmpl)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) = %v, want a parse error", tc.tmpl, err)
			}
			if pe.Pos != tc.pos || pe.Char != tc.char || !strings.Contains(pe.Msg, tc.msg) {
				t.Errorf("Parse(%q) = pos %d char %q msg %q; want pos %d char %q msg containing %q",
					tc.tmpl, pe.Pos, pe.Char, pe.Msg, tc.pos, tc.char, tc.msg)
			}
			msg := err.Error()
			if !strings.Contains(msg, "byte "+itoa(tc.pos)) || !strings.Contains(msg, tc.char) {
				t.Errorf("message %q lacks the position or the character", msg)
			}
			if KindOf(err) != KindParse {
				t.Errorf("kind %s", KindOf(err))
			}
		})
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestReferencesAndProviders(t *testing.T) {
	tm, err := ParseWith("$${x.y} ${env:A} ${a|'c'|b.c} ${'k'}", "local")
	if err != nil {
		t.Fatal(err)
	}
	refs := tm.References()
	if len(refs) != 2 {
		t.Fatalf("got %d references, want 2 (escapes and collector refs are text)", len(refs))
	}
	var provs []string
	for _, a := range refs[0].Alts {
		provs = append(provs, a.Provider())
	}
	if strings.Join(provs, ",") != "local,,b" {
		t.Errorf("providers %v", provs)
	}
	if refs[0].Source != "${a|'c'|b.c}" {
		t.Errorf("source %q", refs[0].Source)
	}
}

func TestFlatSet(t *testing.T) {
	ctx := FlatSet(map[string]string{"site.id": "007", "host.name": "h1", "host.name.full": "h1.example", "a": "x"})
	for _, tc := range []struct {
		src  string
		want any
		err  bool
	}{
		{"${site.id}", "007", false},
		{"${host.name}/${host.name.full}", "h1/h1.example", false},
		{"${site}", nil, true}, // a prefix of keys is not a variable
		{"${site.name|'none'}", "none", false},
		{"${site.name|host.name}", "h1", false},
		{"${env:HOME}", "${env:HOME}", false},
		{"$${site.id}", "${site.id}", false},
		{"${nosuch.key}", nil, true},
	} {
		tpl, err := Parse(tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		v, _, err := tpl.Render(ctx)
		if (err != nil) != tc.err || (!tc.err && v != tc.want) {
			t.Errorf("%s: got %v, %v; want %v (error %v)", tc.src, v, err, tc.want, tc.err)
		}
	}
	if _, _, err := mustParse(t, "${a.b}").Render(FlatSet(nil)); err == nil {
		t.Error("a nil flat set has no variables")
	}
}

func mustParse(t *testing.T, src string) *Template {
	t.Helper()
	tpl, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

func TestExpandKeepsLiteralTextAsWritten(t *testing.T) {
	ctx := FlatSet(map[string]string{"site.id": "a$b", "x.y": "${env:SECRET}"})
	dollars := func(s string) string { return strings.ReplaceAll(s, "$", "$$") }
	for src, want := range map[string]string{
		"${site.id}":                    "a$$b",
		"pre $${site.id} ${site.id} $":  "pre $${site.id} a$$b $",
		"${env:HOME}/${site.id}":        "${env:HOME}/a$$b",
		"${x.y}":                        "$${env:SECRET}",
		"$${a.b}$${c.d} ${site.id} $$x": "$${a.b}$${c.d} a$$b $$x",
		"${nope.x|'c$'}":                "c$$",
	} {
		got, err := mustParse(t, src).Expand(ctx, dollars)
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", src, got, err, want)
		}
	}
	if _, err := mustParse(t, "${no.such}").Expand(ctx, dollars); KindOf(err) != KindMissing {
		t.Errorf("missing: %v", err)
	}
}

func TestFlatMappingSet(t *testing.T) {
	set := FlatMappingSet(map[string]string{"host.name": "h", "docker.container.name": "from-context"}, "docker",
		map[string]string{"docker.container.name": "c1"})
	for src, want := range map[string]string{"${docker.container.name}": "c1", "${host.name}": "h"} {
		if v, _, err := mustParse(t, src).Render(set); err != nil || v != want {
			t.Errorf("%s: %v %v", src, v, err)
		}
	}
	if _, _, err := mustParse(t, "${docker.container.id}").Render(set); KindOf(err) != KindMissing {
		t.Errorf("a variable of the mapping's provider that the mapping lacks must be missing, got %v", err)
	}
}
