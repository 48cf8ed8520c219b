package vars

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/maphash"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const docCtx = `{
  "env": {"HOME": "/root"},
  "host": {"name": "h1"},
  "local": {"port": 8080, "nothing": null, "five": 5044, "fivestr": "5044", "ratio": 0.5, "two": 2.0, "on": true}
}`

// dockerDyn has two containers and one local_dynamic item; local_dynamic has
// the lower priority number so it renders first.
const dockerDyn = `[
  {"provider": "docker", "id": "c1", "priority": 1, "vars": {"container": {"name": "web"}, "paths": {"log": "/var/log/c1.log"}, "port": 5044},
   "processors": [{"add_fields": {"target": "container", "fields": {"name": "web"}}}]},
  {"provider": "docker", "id": "c2", "priority": 1, "vars": {"container": {"name": "db"}, "port": "5044"},
   "processors": [{"add_fields": {"target": "container", "fields": {"name": "db"}}}]},
  {"provider": "local_dynamic", "id": "0", "priority": 0, "vars": {"item": "a"}},
  {"provider": "local_dynamic", "id": "1", "priority": 0, "vars": {"item": "b"}}
]`

func decodeJSON(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	n, err := Normalize(v)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func newTestData(t testing.TB, ctxJSON, dynJSON string) *Data {
	t.Helper()
	ctx, _ := decodeJSON(t, ctxJSON).(map[string]any)
	var ms []Mapping
	if dynJSON != "" {
		for _, e := range decodeJSON(t, dynJSON).([]any) {
			m := e.(map[string]any)
			mp := Mapping{Provider: m["provider"].(string), ID: m["id"].(string)}
			if p, ok := m["priority"].(int64); ok {
				mp.Priority = int(p)
			}
			mp.Vars, _ = m["vars"].(map[string]any)
			mp.Processors, _ = m["processors"].([]any)
			ms = append(ms, mp)
		}
	}
	d, err := NewData(ctx, ms)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func renderYAML(t testing.TB, doc, ctxJSON, dynJSON string) (*Result, error) {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("bad test YAML: %v", err)
	}
	return Engine{}.RenderDocument(v, newTestData(t, ctxJSON, dynJSON))
}

// canon re-decodes JSON so comparisons ignore key order and formatting.
func canon(t testing.TB, v any) any {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return decodeJSON(t, buf.String())
}

func TestRenderDocument(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		dyn     string // mappings JSON; "" for none
		want    string // JSON {"document":…, "dropped":[…]}
		wantErr Kind
	}{
		{
			name: "no inputs; other top-level keys untouched",
			doc:  "agent: {x: '${a..b}', y: '${nope}'}\nversion: 2",
			want: `{"document": {"agent": {"x": "${a..b}", "y": "${nope}"}, "version": 2}, "dropped": []}`,
		},
		{
			name: "empty inputs list stays",
			doc:  "inputs: []",
			want: `{"document": {"inputs": []}, "dropped": []}`,
		},
		{
			name: "context render, whole-value typing, interpolation",
			doc: `inputs:
  - id: a
    port: "${local.port}"
    ratio: "${local.ratio}"
    two: "${local.two}"
    on: "${local.on}"
    url: "http://${host.name}:${local.port}/${local.ratio}"
    home: "${HOME}"
    lit: 42
    keep: true`,
			want: `{"document": {"inputs": [{"id": "a", "port": 8080, "ratio": 0.5, "two": 2.0, "on": true,
			  "url": "http://h1:8080/0.5", "home": "/root", "lit": 42, "keep": true}]}, "dropped": []}`,
		},
		{
			name: "map keys and non-string scalars are not substituted",
			doc:  "inputs:\n  - {'${HOME}': x, n: 1.5, b: false}",
			want: `{"document": {"inputs": [{"${HOME}": "x", "n": 1.5, "b": false}]}, "dropped": []}`,
		},
		{
			name: "null whole-value removes the key and the list element",
			doc:  "inputs:\n  - {a: '${local.nothing}', b: ['x', '${local.nothing}', 'y'], c: 'v=${local.nothing}'}",
			want: `{"document": {"inputs": [{"b": ["x", "y"], "c": "v="}]}, "dropped": []}`,
		},
		{
			name: "missing reference drops the input and is reported",
			doc: `inputs:
  - type: logfile
    path: /var/log/foo
  - type: logfile
    path: "${ unknown.key }"
  - type: nested
    list: [{deep: "${also.missing}"}]`,
			want: `{"document": {"inputs": [{"type": "logfile", "path": "/var/log/foo"}]},
			  "dropped": [{"input": 1, "set": "context", "reference": "${ unknown.key }"},
			              {"input": 2, "set": "context", "reference": "${also.missing}"}]}`,
		},
		{
			name: "non-map items are dropped, indexes stay those of the source",
			doc:  "inputs:\n  - just a string\n  - 7\n  - {p: '${nope.x}'}",
			want: `{"document": {"inputs": []}, "dropped": [{"input": 2, "set": "context", "reference": "${nope.x}"}]}`,
		},
		{
			name: "seed docker example: one copy per container, processors prepended, ids suffixed",
			dyn:  dockerDyn,
			doc: `inputs:
  - id: logs
    type: logfile
    path: "${docker.paths.log}"
    processors: [{drop_fields: {fields: [x]}}]`,
			want: `{"document": {"inputs": [
			  {"id": "logs-docker-c1", "original_id": "logs", "type": "logfile", "path": "/var/log/c1.log",
			   "processors": [{"add_fields": {"target": "container", "fields": {"name": "web"}}}, {"drop_fields": {"fields": ["x"]}}]}
			]}, "dropped": [
			  {"input": 0, "set": "context", "reference": "${docker.paths.log}"},
			  {"input": 0, "set": "docker-c2", "reference": "${docker.paths.log}"}
			]}`,
		},
		{
			name: "fallback: mapping renders that used no docker variable are not duplicated",
			dyn:  dockerDyn,
			doc:  `inputs: [{type: logfile, path: "${docker.paths.log|'/var/log/other'}"}]`,
			want: `{"document": {"inputs": [
			  {"type": "logfile", "path": "/var/log/other"},
			  {"id": "docker-c1", "type": "logfile", "path": "/var/log/c1.log",
			   "processors": [{"add_fields": {"target": "container", "fields": {"name": "web"}}}]}
			]}, "dropped": []}`,
		},
		{
			name: "order: context renders first, then mapping by mapping (priority, provider, own order)",
			dyn:  dockerDyn,
			doc: `inputs:
  - {n: docker, c: "${docker.container.name}"}
  - {n: plain}
  - {n: item, i: "${local_dynamic.item}"}`,
			want: `{"document": {"inputs": [
			  {"n": "plain"},
			  {"id": "local_dynamic-0", "n": "item", "i": "a"},
			  {"id": "local_dynamic-1", "n": "item", "i": "b"},
			  {"id": "docker-c1", "n": "docker", "c": "web", "processors": [{"add_fields": {"target": "container", "fields": {"name": "web"}}}]},
			  {"id": "docker-c2", "n": "docker", "c": "db", "processors": [{"add_fields": {"target": "container", "fields": {"name": "db"}}}]}
			]}, "dropped": [
			  {"input": 0, "set": "context", "reference": "${docker.container.name}"},
			  {"input": 2, "set": "context", "reference": "${local_dynamic.item}"}
			]}`,
		},
		{
			name: "a missing non-dynamic reference is reported for every set the input renders for",
			dyn:  dockerDyn,
			doc:  `inputs: [{c: "${docker.container.name}", x: "${local.nope}"}]`,
			want: `{"document": {"inputs": []}, "dropped": [
			  {"input": 0, "set": "context", "reference": "${docker.container.name}"},
			  {"input": 0, "set": "docker-c1", "reference": "${local.nope}"},
			  {"input": 0, "set": "docker-c2", "reference": "${local.nope}"}
			]}`,
		},
		{
			name: "dedup is type-aware: 5044 and \"5044\" are different renders",
			dyn:  dockerDyn,
			doc:  `inputs: [{port: "${docker.port}"}]`,
			want: `{"document": {"inputs": [
			  {"id": "docker-c1", "port": 5044, "processors": [{"add_fields": {"target": "container", "fields": {"name": "web"}}}]},
			  {"id": "docker-c2", "port": "5044", "processors": [{"add_fields": {"target": "container", "fields": {"name": "db"}}}]}
			]}, "dropped": [{"input": 0, "set": "context", "reference": "${docker.port}"}]}`,
		},
		{
			name: "dedup is global over inputs; first render wins",
			doc:  "inputs:\n  - {a: 1}\n  - {a: '${local.five}'}\n  - {a: 1}\n  - {a: '${local.fivestr}'}\n  - {a: 5044}",
			want: `{"document": {"inputs": [{"a": 1}, {"a": 5044}, {"a": "5044"}]}, "dropped": []}`,
		},
		{
			name: "dedup compares before suffixing: a mapping render equal to the context render is not added",
			dyn:  `[{"provider": "docker", "id": "c1", "vars": {"x": "same"}, "processors": [{"p": 1}]}]`,
			doc:  `inputs: [{v: "${docker.x|'same'}"}]`,
			want: `{"document": {"inputs": [{"v": "same"}]}, "dropped": []}`,
		},
		{
			name: "dedup across mappings: equal renders of two mappings are kept once",
			dyn: `[{"provider": "p", "id": "a", "vars": {"port": 1}, "processors": [{"x": 1}]},
			       {"provider": "p", "id": "b", "vars": {"port": 1}, "processors": [{"x": 2}]},
			       {"provider": "p", "id": "c", "vars": {"port": 2}}]`,
			doc: `inputs: [{id: in, port: "${p.port}"}]`,
			want: `{"document": {"inputs": [
			  {"id": "in-p-a", "original_id": "in", "port": 1, "processors": [{"x": 1}]},
			  {"id": "in-p-c", "original_id": "in", "port": 2}
			]}, "dropped": [{"input": 0, "set": "context", "reference": "${p.port}"}]}`,
		},
		{
			name: "two dynamic providers: no render, one dropped entry with a reason",
			dyn:  dockerDyn,
			doc:  `inputs: [{a: "${docker.port}", b: "${local_dynamic.item|'x'}"}, {ok: yes}]`,
			want: `{"document": {"inputs": [{"ok": "yes"}]}, "dropped": [
			  {"input": 0, "set": "context", "reason": "input references more than one dynamic provider (docker, local_dynamic)"}
			]}`,
		},
		{
			name: "a provider without mappings is like an unknown provider",
			dyn:  dockerDyn,
			doc:  `inputs: [{a: "${kubernetes.pod.name}", b: "${docker.port|'x'}"}, {a: "${kubernetes.pod.name|'none'}"}]`,
			want: `{"document": {"inputs": [
			  {"a": "none"}
			]}, "dropped": [
			  {"input": 0, "set": "context", "reference": "${kubernetes.pod.name}"},
			  {"input": 0, "set": "docker-c1", "reference": "${kubernetes.pod.name}"},
			  {"input": 0, "set": "docker-c2", "reference": "${kubernetes.pod.name}"}
			]}`,
		},
		{
			name: "escaped and collector references do not count as referencing a provider",
			dyn:  dockerDyn,
			doc:  `inputs: [{a: "$${docker.port}", b: "${docker:port}"}]`,
			want: `{"document": {"inputs": [{"a": "${docker.port}", "b": "${docker:port}"}]}, "dropped": []}`,
		},
		{
			name: "ids: numbers formatted canonically, null id counts as none",
			dyn:  `[{"provider": "p", "id": "m", "vars": {"v": 1}}]`,
			doc: `inputs:
  - {id: 7, v: "${p.v}"}
  - {id: 2.0, v: "${p.v}", w: 1}
  - {id: 0.5, v: "${p.v}", w: 2}
  - {id: 1e21, v: "${p.v}", w: 3}
  - {id: null, v: "${p.v}", w: 4}
  - {v: "${p.v}", w: 5}
  - {id: "", v: "${p.v}", w: 6}`,
			want: `{"document": {"inputs": [
			  {"id": "7-p-m", "original_id": 7, "v": 1},
			  {"id": "2-p-m", "original_id": 2.0, "v": 1, "w": 1},
			  {"id": "0.5-p-m", "original_id": 0.5, "v": 1, "w": 2},
			  {"id": "1e+21-p-m", "original_id": 1e21, "v": 1, "w": 3},
			  {"id": "p-m", "v": 1, "w": 4},
			  {"id": "p-m", "v": 1, "w": 5},
			  {"id": "-p-m", "original_id": "", "v": 1, "w": 6}
			]}, "dropped": [
			  {"input": 0, "set": "context", "reference": "${p.v}"},
			  {"input": 1, "set": "context", "reference": "${p.v}"},
			  {"input": 2, "set": "context", "reference": "${p.v}"},
			  {"input": 3, "set": "context", "reference": "${p.v}"},
			  {"input": 4, "set": "context", "reference": "${p.v}"},
			  {"input": 5, "set": "context", "reference": "${p.v}"},
			  {"input": 6, "set": "context", "reference": "${p.v}"}
			]}`,
		},
		{
			name: "an id from a substitution is suffixed after rendering",
			dyn:  `[{"provider": "p", "id": "m", "vars": {"name": "svc"}}]`,
			doc:  `inputs: [{id: "${p.name}"}]`,
			want: `{"document": {"inputs": [{"id": "svc-p-m", "original_id": "svc"}]},
			  "dropped": [{"input": 0, "set": "context", "reference": "${p.name}"}]}`,
		},
		{
			name: "only dynamic copies are id-checked: a bool id in a context render is fine",
			doc:  `inputs: [{id: true}]`,
			want: `{"document": {"inputs": [{"id": true}]}, "dropped": []}`,
		},
		{
			name:    "bool id in a dynamic copy fails the render",
			dyn:     `[{"provider": "p", "id": "m", "vars": {"v": 1}}]`,
			doc:     `inputs: [{id: true, v: "${p.v}"}]`,
			wantErr: KindRender,
		},
		{
			name:    "list id in a dynamic copy fails the render",
			dyn:     `[{"provider": "p", "id": "m", "vars": {"v": 1}}]`,
			doc:     `inputs: [{id: [1], v: "${p.v}"}]`,
			wantErr: KindRender,
		},
		{
			name:    "map id in a dynamic copy fails the render",
			dyn:     `[{"provider": "p", "id": "m", "vars": {"v": 1}}]`,
			doc:     `inputs: [{id: {a: 1}, v: "${p.v}"}]`,
			wantErr: KindRender,
		},
		{
			name: "processors: not a list is left alone; mapping processors verbatim (not parsed)",
			dyn:  `[{"provider": "p", "id": "m", "vars": {"v": 1}, "processors": [{"add_fields": {"x": "${a..b}"}}]}]`,
			doc:  "inputs:\n  - {v: '${p.v}', processors: {not: list}}\n  - {v: '${p.v}', w: 1, processors: null}\n  - {v: '${p.v}', w: 2}",
			want: `{"document": {"inputs": [
			  {"id": "p-m", "v": 1, "processors": {"not": "list"}},
			  {"id": "p-m", "v": 1, "w": 1, "processors": null},
			  {"id": "p-m", "v": 1, "w": 2, "processors": [{"add_fields": {"x": "${a..b}"}}]}
			]}, "dropped": [
			  {"input": 0, "set": "context", "reference": "${p.v}"},
			  {"input": 1, "set": "context", "reference": "${p.v}"},
			  {"input": 2, "set": "context", "reference": "${p.v}"}
			]}`,
		},
		{
			name: "outputs render with the context set only",
			dyn:  dockerDyn,
			doc:  "outputs:\n  default: {hosts: ['${host.name}:${local.port}'], port: '${local.port}', x: '${docker.port|local.nothing}'}",
			want: `{"document": {"outputs": {"default": {"hosts": ["h1:8080"], "port": 8080}}}, "dropped": []}`,
		},
		{name: "missing in outputs fails with kind missing", doc: "outputs: {default: {hosts: ['${nope.x}']}}", wantErr: KindMissing},
		{name: "dynamic variable in outputs is missing", dyn: dockerDyn, doc: "outputs: {default: {p: '${docker.port}'}}", wantErr: KindMissing},
		{name: "parse error in an input fails the render", doc: "inputs: [{a: '${a..b}'}]", wantErr: KindParse},
		{name: "parse error wins over an earlier missing reference", doc: "inputs: [{a: '${nope.x}'}, {b: '${a@b}'}]", wantErr: KindParse},
		{name: "parse error in outputs wins over missing in inputs", doc: "inputs: [{a: '${nope.x}'}]\noutputs: {o: '${'}", wantErr: KindParse},
		{name: "alternatives after a constant are parsed", doc: "inputs: [{a: \"${'c'|a..b}\"}]", wantErr: KindParse},
		{name: "parse error in a list inside an input", doc: "inputs: [{a: [x, {b: '${}'}]}]", wantErr: KindParse},
		{name: "inputs null", doc: "inputs: null", wantErr: KindRender},
		{name: "inputs not a list", doc: "inputs: {a: 1}", wantErr: KindRender},
		{name: "outputs not a map", doc: "outputs: [a]", wantErr: KindRender},
		{name: "outputs null", doc: "outputs:", wantErr: KindRender},
		{name: "document not a map", doc: "[1, 2]", wantErr: KindRender},
		{name: "empty document", doc: "", wantErr: KindRender},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := renderYAML(t, tc.doc, docCtx, tc.dyn)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("got no error, want kind %s; result %s", tc.wantErr, jsonOf(t, res.Document))
				}
				if k := KindOf(err); k != tc.wantErr {
					t.Fatalf("got kind %s (%v), want %s", k, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("RenderDocument: %v", err)
			}
			got := canon(t, map[string]any{"document": res.Document, "dropped": res.Dropped})
			want := decodeJSON(t, tc.want)
			// Compared as JSON text: what the front end prints (2.0 prints 2).
			if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
				t.Errorf("got\n%s\nwant\n%s", g, w)
			}
		})
	}
}

func TestRenderDocumentWarnsOnNonMapInputs(t *testing.T) {
	res, err := renderYAML(t, "inputs: [x, {a: 1}]", docCtx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "inputs[0]") {
		t.Fatalf("warnings %q, want one naming inputs[0]", res.Warnings)
	}
}

func TestRenderDocumentErrorsNameTheirPlace(t *testing.T) {
	_, err := renderYAML(t, "outputs: {default: {hosts: [a, '${nope.x}']}}", docCtx, "")
	var me *MissingError
	if !errors.As(err, &me) || me.Path != "outputs.default.hosts[1]" || me.Reference != "${nope.x}" {
		t.Fatalf("got %v (%#v)", err, me)
	}
	_, err = renderYAML(t, `inputs: [{id: true, v: "${p.v}"}]`, docCtx, `[{"provider": "p", "id": "m", "vars": {"v": 1}}]`)
	if err == nil || !strings.Contains(err.Error(), "inputs[0]") || !strings.Contains(err.Error(), "p-m") {
		t.Fatalf("id error %v does not name the input and set", err)
	}
}

// TestRenderDocumentDoesNotAliasInputs guards the shared compiled literals:
// rendering twice must give the same answer and leave provider data alone.
func TestRenderDocumentDoesNotAliasInputs(t *testing.T) {
	data := newTestData(t, docCtx, dockerDyn)
	var doc any
	if err := yaml.Unmarshal([]byte(`inputs: [{id: x, l: "${docker.container}", s: {k: v}}]`), &doc); err != nil {
		t.Fatal(err)
	}
	first, err := Engine{}.RenderDocument(doc, data)
	if err != nil {
		t.Fatal(err)
	}
	in := first.Document["inputs"].([]any)[0].(map[string]any)
	in["l"].(map[string]any)["name"] = "mutated"
	second, err := Engine{}.RenderDocument(doc, data)
	if err != nil {
		t.Fatal(err)
	}
	got := second.Document["inputs"].([]any)[0].(map[string]any)["l"].(map[string]any)["name"]
	if got != "web" {
		t.Fatalf("provider data was aliased: %v", got)
	}
}

func TestNewDataValidation(t *testing.T) {
	tests := []struct {
		name string
		ctx  map[string]any
		ms   []Mapping
		want string
	}{
		{"context not an object", map[string]any{"local": "x"}, nil, "context.local"},
		{"no provider", nil, []Mapping{{ID: "1"}}, "mappings[0]"},
		{"no id", nil, []Mapping{{Provider: "p"}}, "no id"},
		{"duplicate id", nil, []Mapping{{Provider: "p", ID: "1"}, {Provider: "p", ID: "1"}}, "duplicate"},
		{"bad value type", map[string]any{"local": map[string]any{"c": make(chan int)}}, nil, "context.local.c"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewData(tc.ctx, tc.ms)
			if err == nil || !strings.Contains(err.Error(), tc.want) || KindOf(err) != KindRender {
				t.Fatalf("got %v, want a render error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestNestDottedKeys(t *testing.T) {
	in := map[string]any{
		"app.name":    "x",
		"app":         map[string]any{"version": "1"},
		"labels":      map[string]any{"com.docker.compose.project": "demo"},
		"list":        []any{map[string]any{"a.b": int64(1)}},
		"plain":       "p",
		"scalar":      "s",
		"scalar.deep": "d",
	}
	got := Nest(in)
	want := map[string]any{
		"app":    map[string]any{"name": "x", "version": "1"},
		"labels": map[string]any{"com": map[string]any{"docker": map[string]any{"compose": map[string]any{"project": "demo"}}}},
		"list":   []any{map[string]any{"a": map[string]any{"b": int64(1)}}},
		"plain":  "p",
		"scalar": map[string]any{"deep": "d"},
	}
	if !Equal(got, want) {
		t.Fatalf("got %s", jsonOf(t, got))
	}
}

func TestEqualIsTypeAware(t *testing.T) {
	cases := []struct {
		a, b any
		eq   bool
	}{
		{int64(5044), "5044", false},
		{int64(2), 2.0, false},
		{2.0, 2.0, true},
		{nil, "", false},
		{[]any{int64(1)}, []any{int64(1)}, true},
		{[]any{int64(1)}, []any{int64(1), int64(2)}, false},
		{map[string]any{"a": nil}, map[string]any{}, false},
		{map[string]any{"a": nil}, map[string]any{"b": nil}, false},
		{map[string]any{"a": []any{true}}, map[string]any{"a": []any{true}}, true},
		{true, "true", false},
	}
	d := newDedup(0)
	for _, c := range cases {
		if got := Equal(c.a, c.b); got != c.eq {
			t.Errorf("Equal(%#v, %#v) = %v", c.a, c.b, got)
		}
		if c.eq && hashValue(d.seed, c.a) != hashValue(d.seed, c.b) {
			t.Errorf("equal values %#v hash differently", c.a)
		}
	}
}

func TestContextDottedProviderKeys(t *testing.T) {
	d, err := NewData(map[string]any{"local.app": map[string]any{"name": "x"}, "local": map[string]any{"port": 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := Engine{}.RenderValue("${local.app.name}:${local.port}", d)
	if err != nil || v != "x:1" {
		t.Fatalf("got %v, %v", v, err)
	}
}

func TestRenderTree(t *testing.T) {
	data := newTestData(t, docCtx, dockerDyn)
	comp := map[string]any{"receivers": map[string]any{"filelog": map[string]any{
		"include": []any{"${docker.paths.log}"}, "port": "${local.port}", "gone": "${local.nothing}",
	}}}
	out, used, err := Engine{}.RenderTree(comp, data.MappingSet(2)) // docker-c1 (after the two local_dynamic)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"receivers":{"filelog":{"include":["/var/log/c1.log"],"port":8080}}}`
	if got := jsonOf(t, out); got != want || !used {
		t.Fatalf("got %s used=%v, want %s used=true", got, used, want)
	}
	_, _, err = Engine{}.RenderTree(comp, data.ContextSet())
	var me *MissingError
	if !errors.As(err, &me) || me.Path != "receivers.filelog.include[0]" {
		t.Fatalf("context set: %v", err)
	}
	if _, _, err := (Engine{}).RenderTree(map[string]any{"a": "${a..b}"}, data.ContextSet()); KindOf(err) != KindParse {
		t.Fatalf("parse error: %v", err)
	}
}

// TestDedupCollisions forces every value into one hash bucket: Equal alone
// must decide.
func TestDedupCollisions(t *testing.T) {
	d := newDedup(4)
	d.hash = func(maphash.Seed, any) uint64 { return 42 }
	vals := []any{"a", int64(1), "1", 1.0, []any{"a"}, map[string]any{"a": nil}, nil, map[string]any{"a": ""}}
	for _, v := range vals {
		if !d.add(v) {
			t.Fatalf("%#v reported as a duplicate", v)
		}
	}
	for _, v := range vals {
		if d.add(v) {
			t.Fatalf("%#v not found again", v)
		}
	}
	if len(d.more[42]) != len(vals)-1 {
		t.Fatalf("bucket holds %d, want %d", len(d.more[42]), len(vals)-1)
	}
}

func TestNilDataMeansNoData(t *testing.T) {
	if _, _, err := (Engine{}).RenderValue("${a.b}", nil); KindOf(err) != KindMissing {
		t.Fatalf("value: %v", err)
	}
	res, err := Engine{}.RenderDocument(map[string]any{"inputs": []any{map[string]any{"a": "${a.b|'x'}"}}}, nil)
	if err != nil || len(res.Document["inputs"].([]any)) != 1 {
		t.Fatalf("document: %v %v", res, err)
	}
	if _, _, err := (Engine{}).RenderTree("${a.b}", Set{}); KindOf(err) != KindMissing {
		t.Fatalf("zero set: %v", err)
	}
}
