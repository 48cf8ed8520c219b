package configrender

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/blueprint"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// estate writes files (path → content) under a temp root and loads it.
func estate(t *testing.T, files map[string]string) *blueprint.Estate {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	est, err := blueprint.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	return est
}

const gateway = `name: gw
version: 1
owner: o
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
    config:
      protocols:
        http:
          endpoint: 127.0.0.1:${site.port|'4318'}
  - name: files
    class: receiver
    type: filelog
    version: 1
    config:
      include: ["/var/log/${app.name}/*.log"]
  - name: batch
    class: processor
    type: batch
    version: 1
  - name: tag
    class: processor
    type: resource
    version: 1
    config:
      attributes:
        - key: site.id
          value: ${site.id}
          action: upsert
        - key: region
          value: "${site.region|'none'}"
          action: upsert
        - key: home
          value: ${env:HOME}
          action: upsert
        - key: escaped
          value: $${site.id}
          action: upsert
  - name: out
    class: exporter
    type: file
    version: 1
    config:
      path: /var/lib/otelcol/${site.id}.json
  - name: health
    class: extension
    type: health_check
    version: 1
pipelines:
  logs:
    - component: in
    - component: files
    - component: tag
    - component: batch
    - component: out
  traces:
    - component: in
    - component: batch
    - component: out
extensions:
  - component: health
`

func compile(t *testing.T, files map[string]string, id string) *Template {
	t.Helper()
	tm, err := Compile(estate(t, files), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func TestRenderGolden(t *testing.T) {
	tm := compile(t, map[string]string{"teams/df/blueprints/gw.yaml": gateway}, "df/gw")
	for _, tc := range []struct {
		name string
		ctx  Context
	}{
		{"all", Context{"site.id": "edge-007", "site.port": "4319", "site.region": "north", "app.name": "shop"}},
		{"no-app", Context{"site.id": "007"}}, // the filelog receiver is dropped
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tm.Render(Input{Context: tc.ctx})
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.name+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, res.Body, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Body) != string(want) {
				t.Fatalf("render differs from %s (-update to accept):\n%s", golden, res.Body)
			}
			var doc map[string]any
			if err := yaml.Unmarshal(res.Body, &doc); err != nil {
				t.Fatalf("render does not parse: %v", err)
			}
		})
	}
}

// What the render reads back as: values keep their meaning.
func TestRenderTypesAndDrops(t *testing.T) {
	tm := compile(t, map[string]string{"teams/df/blueprints/gw.yaml": gateway}, "df/gw")
	res, err := tm.Render(Input{Context: Context{"site.id": "007", "site.port": "4319"}})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Receivers  map[string]any `yaml:"receivers"`
		Processors map[string]struct {
			Attributes []map[string]any `yaml:"attributes"`
		} `yaml:"processors"`
		Exporters map[string]map[string]any `yaml:"exporters"`
		Service   struct {
			Pipelines map[string]map[string][]string `yaml:"pipelines"`
		} `yaml:"service"`
	}
	if err := yaml.Unmarshal(res.Body, &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Receivers["filelog/files"]; ok {
		t.Error("the filelog receiver reads ${app.name}, which is missing: it must be dropped")
	}
	if len(res.Dropped) != 1 || res.Dropped[0].Receiver != "filelog/files" || res.Dropped[0].Variable != "${app.name}" {
		t.Errorf("dropped %+v", res.Dropped)
	}
	if got := doc.Service.Pipelines["logs"]["receivers"]; len(got) != 1 || got[0] != "otlp/in" {
		t.Errorf("logs receivers %v", got)
	}
	attrs := doc.Processors["resource/tag"].Attributes
	want := []any{"007", "none", "${env:HOME}", "$${site.id}"}
	for i, w := range want {
		if attrs[i]["value"] != w {
			t.Errorf("attribute %d: %#v, want %#v", i, attrs[i]["value"], w)
		}
	}
	if p := doc.Exporters["file/out"]["path"]; p != "/var/lib/otelcol/007.json" {
		t.Errorf("path %#v", p)
	}
}

// A value keeps the type of where it came from. A string — every value of
// the attribute view, a provider's string, a constant — stays a string
// wherever it lands (quoted where YAML would read another type); a
// provider's number or boolean is typed where it is a plain whole value,
// and a string where it is quoted, part of a string or a key.
func TestRenderScalarTypes(t *testing.T) {
	bp := `name: b
version: 1
owner: o
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
  - name: out
    class: exporter
    type: debug
    version: 1
    config:
      plain: ${v.x}
      quoted: "${v.x}"
      interpolated: x${v.x}
      fallback: ${v.none|'8'}
      keys:
        ${v.x}: k
pipelines:
  logs:
    - component: in
    - component: out
`
	tm := compile(t, map[string]string{"teams/t/blueprints/b.yaml": bp}, "t/b")
	for _, tc := range []struct {
		value, typ string
		plain      any
	}{
		// The attribute view's strings: a label site.wave "1" stays "1".
		{"4318", "", "4318"}, {"1", "", "1"}, {"-2", "", "-2"}, {"1.5", "", "1.5"}, {"true", "", "true"}, {"false", "", "false"},
		{"007", "", "007"}, {"yes", "", "yes"}, {"null", "", "null"}, {"~", "", "~"}, {"", "", ""}, {"2001-12-14", "", "2001-12-14"},
		// A provider's numbers and booleans.
		{"4318", TypeNumber, 4318}, {"-2", TypeNumber, -2}, {"1.5", TypeNumber, 1.5}, {"true", TypeBool, true}, {"false", TypeBool, false},
		// A number JSON writes in a form YAML would not read back as that
		// number stays its text.
		{"1e+21", TypeNumber, "1e+21"}, {"99999999999999999999", TypeNumber, "99999999999999999999"},
	} {
		in := Input{Context: Context{"v.x": tc.value}}
		if tc.typ != "" {
			in.Types = map[string]string{"v.x": tc.typ}
		}
		res, err := tm.Render(in)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Exporters map[string]map[string]any `yaml:"exporters"`
		}
		if err := yaml.Unmarshal(res.Body, &doc); err != nil {
			t.Fatalf("%q: %v\n%s", tc.value, err, res.Body)
		}
		got := doc.Exporters["debug/out"]
		keys, _ := got["keys"].(map[string]any)
		if got["plain"] != tc.plain || got["quoted"] != tc.value || got["interpolated"] != "x"+tc.value || got["fallback"] != "8" || keys[tc.value] != "k" {
			t.Errorf("%q (%s): plain %#v quoted %#v interpolated %#v fallback %#v keys %#v", tc.value, tc.typ, got["plain"], got["quoted"], got["interpolated"], got["fallback"], got["keys"])
		}
	}
}

// Two keys of one mapping that render alike are a render error.
func TestRenderKeyCollision(t *testing.T) {
	bp := `name: b
version: 1
owner: o
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
  - name: out
    class: exporter
    type: otlphttp
    version: 1
    config:
      headers:
        ${site.a}: one
        ${site.b}: two
pipelines:
  logs:
    - component: in
    - component: out
`
	tm := compile(t, map[string]string{"teams/t/blueprints/b.yaml": bp}, "t/b")
	if _, err := tm.Render(Input{Context: Context{"site.a": "x-h", "site.b": "x-h"}}); err == nil || !strings.Contains(err.Error(), `two keys of one mapping render to "x-h"`) {
		t.Fatalf("colliding keys: %v", err)
	}
	res, err := tm.Render(Input{Context: Context{"site.a": "x-a", "site.b": "x-b"}})
	if err != nil || !strings.Contains(string(res.Body), `"x-a": one`) {
		t.Fatalf("distinct keys: %v\n%s", err, res.Body)
	}
}

// No value can add YAML structure: hostile values read back as the same
// strings, and the document keeps its shape.
func TestRenderValueInjection(t *testing.T) {
	bp := `name: b
version: 1
owner: o
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
  - name: out
    class: exporter
    type: debug
    version: 1
    config:
      a: ${v.x}
      b:
        - ${v.x}
        - "${v.x}"
      c: pre ${v.x} post
pipelines:
  logs:
    - component: in
    - component: out
`
	tm := compile(t, map[string]string{"teams/t/blueprints/b.yaml": bp}, "t/b")
	for _, v := range []string{"a: b\nc: d", "{", "}", "[x", "*alias", "&anchor x", "!!map {}", "- x", "x\n- y", "'", "\"", "# c",
		"key: value", "|\n  block", ">", "%YAML 1.2", "---", "...", "\x00nul", "\u202eRTL", "\\", "@", "`", "${other.var}", "$${x}"} {
		res, err := tm.Render(Input{Context: Context{"v.x": v}})
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		var doc struct {
			Exporters map[string]map[string]any `yaml:"exporters"`
		}
		if err := yaml.Unmarshal(res.Body, &doc); err != nil {
			t.Fatalf("%q: the render does not parse: %v\n%s", v, err, res.Body)
		}
		got := doc.Exporters["debug/out"]
		lit := strings.ReplaceAll(v, "$", "$$") // what the collector reads as v
		if len(got) != 3 || got["a"] != lit || got["c"] != "pre "+lit+" post" {
			t.Fatalf("%q: read back %#v\n%s", v, got, res.Body)
		}
		if l, ok := got["b"].([]any); !ok || len(l) != 2 || l[0] != lit || l[1] != lit {
			t.Fatalf("%q: list read back %#v", v, got["b"])
		}
	}
}

func TestRenderErrors(t *testing.T) {
	big := strings.Repeat("x", 4096)
	manyRefs := "      list:\n" + strings.Repeat("        - ${v.big}\n", 1100)
	for _, tc := range []struct {
		name    string
		bp      string
		ctx     Context
		compile bool     // the error comes from Compile
		want    []string // in the message
	}{
		{name: "missing in exporter", bp: withExporter("path: /x/${site.missing}.json"), ctx: Context{},
			want: []string{"blueprint t/b", "exporter file/out", "${site.missing}", "not in the collector's context"}},
		{name: "opamp extension", bp: withExtension("opamp"), compile: true,
			want: []string{"blueprint t/b", "extension opamp/ext", "Supervisor"}},
		{name: "parse error", bp: withExporter("path: /x/${site.id"), compile: true,
			want: []string{"blueprint t/b", "exporter file/out", "path"}},
		{name: "too large after substitution", bp: withExporter(strings.TrimPrefix(manyRefs, "      ")), ctx: Context{"v.big": big},
			want: []string{"blueprint t/b", "4 MiB"}},
		{name: "too large before substitution", bp: strings.Replace(withExporter("path: x"), "  logs:\n",
			"  traces:\n    - component: in\n    - component: t/big1@1\n    - component: t/big2@1\n  logs:\n", 1), compile: true,
			want: []string{"blueprint t/b", "4 MiB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			big := "class: exporter\ntype: debug\nversion: 1\nowner: o\nconfig:\n  blob: " + strings.Repeat("y", 3<<20) + "\n"
			tm, err := Compile(estate(t, map[string]string{"teams/t/blueprints/b.yaml": tc.bp,
				"teams/t/components/big1.yaml": "name: big1\n" + big, "teams/t/components/big2.yaml": "name: big2\n" + big}), "t/b", nil)
			if !tc.compile {
				if err != nil {
					t.Fatal(err)
				}
				_, err = tm.Render(Input{Context: tc.ctx})
			}
			if err == nil {
				t.Fatal("no error")
			}
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("%T is not an *Error: %v", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
	if _, err := Compile(estate(t, map[string]string{"teams/t/blueprints/b.yaml": withExporter("path: x")}), "t/nope", nil); !errors.Is(err, blueprint.ErrUnknownBlueprint) {
		t.Errorf("unknown Blueprint: %v", err)
	}
}

func withExporter(cfg string) string {
	return `name: b
version: 1
owner: o
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
  - name: out
    class: exporter
    type: file
    version: 1
    config:
      ` + cfg + `
pipelines:
  logs:
    - component: in
    - component: out
`
}

func withExtension(typ string) string {
	return strings.Replace(withExporter("path: x"), "pipelines:", `  - name: ext
    class: extension
    type: `+typ+`
    version: 1
pipelines:`, 1) + "extensions:\n  - component: ext\n"
}

// A connector that loses one side is removed with the pipelines that
// then have no receivers, and unused Components go with them.
func TestRenderPrunesConnectors(t *testing.T) {
	bp := `name: b
version: 1
owner: o
components:
  - name: a
    class: receiver
    type: filelog
    version: 1
    config:
      include: ["${x.a}"]
  - name: b
    class: receiver
    type: otlp
    version: 1
  - name: fwd
    class: connector
    type: forward
    version: 1
  - name: batch
    class: processor
    type: batch
    version: 1
  - name: out
    class: exporter
    type: debug
    version: 1
pipelines:
  traces:
    - component: a
    - component: batch
    - component: fwd
  logs:
    - component: fwd
    - component: batch
    - component: out
  metrics:
    - component: b
    - component: out
`
	tm := compile(t, map[string]string{"teams/t/blueprints/b.yaml": bp}, "t/b")
	read := func(ctx Context) (map[string]map[string]any, map[string]any) {
		res, err := tm.Render(Input{Context: ctx})
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Receivers  map[string]any `yaml:"receivers"`
			Connectors map[string]any `yaml:"connectors"`
			Service    struct {
				Pipelines map[string]map[string]any `yaml:"pipelines"`
			} `yaml:"service"`
		}
		if err := yaml.Unmarshal(res.Body, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Service.Pipelines, doc.Connectors
	}
	if p, c := read(Context{"x.a": "/log"}); len(p) != 3 || len(c) != 1 {
		t.Fatalf("with x.a: pipelines %v connectors %v", p, c)
	}
	p, c := read(Context{})
	if len(p) != 1 || p["metrics"] == nil || len(c) != 0 {
		t.Fatalf("without x.a: pipelines %v connectors %v", p, c)
	}
}

// Contexts that differ only in keys the Blueprint does not read share a key.
func TestKey(t *testing.T) {
	tm := compile(t, map[string]string{"teams/df/blueprints/gw.yaml": gateway}, "df/gw")
	a := tm.Key(Input{Context: Context{"site.id": "1", "host.name": "a"}})
	b := tm.Key(Input{Context: Context{"site.id": "1", "host.name": "b"}})
	c := tm.Key(Input{Context: Context{"site.id": "2", "host.name": "a"}})
	d := tm.Key(Input{Context: Context{"site.id": "1", "site.port": ""}})
	if a != b || a == c || a == d {
		t.Fatalf("keys: %q %q %q %q", a, b, c, d)
	}
	if got := tm.Variables(); strings.Join(got, ",") != "app.name,site.id,site.port,site.region" {
		t.Fatalf("variables %v", got)
	}
}

// Without any reference the render is the Blueprint's own render.
func TestRenderWithoutVariablesIsTheBlueprint(t *testing.T) {
	files := map[string]string{"teams/t/blueprints/b.yaml": withExporter("path: /x")}
	tm := compile(t, files, "t/b")
	res, err := tm.Render(Input{Context: Context{"a.b": "c"}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := estate(t, files).Render(t.Context(), "t/b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Body) != string(want) || string(tm.Source()) != string(want) {
		t.Fatalf("render %q, blueprint %q", res.Body, want)
	}
}

// TestRenderStopsAtMaxBody: values from a collector's context that would
// make its configuration larger than MaxBody make a render error, and the
// document is not written much past the bound.
func TestRenderStopsAtMaxBody(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: b\nversion: 1\nowner: o\ncomponents:\n  - name: out\n    class: exporter\n    type: debug\n    version: 1\n    config:\n      headers:\n")
	for i := range 2000 {
		fmt.Fprintf(&b, "        h%d: ${site.big}\n", i)
	}
	b.WriteString("pipelines:\n  logs:\n    - component: out\n")
	tm := compile(t, map[string]string{"teams/t/blueprints/b.yaml": b.String()}, "t/b")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := tm.Render(Input{Context: Context{"site.big": strings.Repeat("x", 4096)}})
	runtime.ReadMemStats(&after)
	var re *Error
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "over the 4194304-byte (4 MiB) limit") {
		t.Fatalf("render of about 8 MiB: %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 3*MaxBody {
		t.Fatalf("the refused render allocated %d bytes", grew)
	}
	if res, err := tm.Render(Input{Context: Context{"site.big": "small"}}); err != nil || len(res.Body) > 100<<10 {
		t.Fatalf("small values: %v", err)
	}
}

// A render whose every pipeline lost its receivers is an error, not a
// configuration that collects nothing; one that keeps a pipeline lists
// what it dropped.
func TestRenderEveryPipelineDropped(t *testing.T) {
	tm := compile(t, map[string]string{"teams/t/blueprints/b.yaml": `name: b
version: 1
owner: o
components:
  - name: files
    class: receiver
    type: filelog
    version: 1
    config:
      include: ["${docker.paths.log}"]
  - name: out
    class: exporter
    type: debug
    version: 1
pipelines:
  logs:
    - component: files
    - component: out
`}, "t/b")
	_, err := tm.Render(Input{Context: Context{"site.id": "s1"}})
	var re *Error
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "every pipeline lost its receivers") || !strings.Contains(err.Error(), "${docker.paths.log}") {
		t.Fatalf("every receiver dropped: %v", err)
	}
	res, err := tm.Render(Input{Context: Context{"docker.paths.log": "/l"}})
	if err != nil || len(res.Dropped) != 0 {
		t.Fatalf("with the variable: %v %v", err, res.Dropped)
	}
	w := Dropped{Receiver: "filelog/files", Source: "files", Variable: "${docker.paths.log}"}.Warning()
	if w.Kind != WarningReceiverDropped || w.Component != "filelog/files" || w.Variable != "${docker.paths.log}" {
		t.Fatalf("warning %+v", w)
	}
}
