package configrender

import (
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

const containersBlueprint = `name: b
version: 1
owner: o
components:
  - name: files
    class: receiver
    type: filelog
    version: 1
    config:
      include: ["${docker.paths.log}"]
      start_at: beginning
  - name: in
    class: receiver
    type: otlp
    version: 1
  - name: batch
    class: processor
    type: batch
    version: 1
  - name: out
    class: exporter
    type: debug
    version: 1
    config:
      verbosity: ${site.verbosity|'basic'}
pipelines:
  logs:
    - component: files
    - component: in
    - component: batch
    - component: out
`

func containers(ms ...Mapping) Input {
	return Input{Context: Context{"site.id": "s1"}, Dynamic: map[string][]Mapping{"docker": ms}}
}

func container(id, name string, withProcessor bool) Mapping {
	m := Mapping{ID: id, Vars: map[string]string{"docker.paths.log": "/var/lib/docker/containers/" + id + "/" + id + "-json.log",
		"docker.container.name": name, "docker.container.id": id}}
	if withProcessor {
		m.Processors = []any{map[string]any{"add_fields": map[string]any{"target": "container",
			"fields": map[string]any{"name": name, "id": id, "labels": map[string]any{"tier": "web"}}}}}
	}
	return m
}

type renderedDoc struct {
	Receivers  map[string]map[string]any `yaml:"receivers"`
	Processors map[string]map[string]any `yaml:"processors"`
	Service    struct {
		Pipelines map[string]map[string][]string `yaml:"pipelines"`
	} `yaml:"service"`
}

func readDoc(t *testing.T, body []byte) renderedDoc {
	t.Helper()
	var d renderedDoc
	if err := yaml.Unmarshal(body, &d); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	return d
}

func TestRenderPerMapping(t *testing.T) {
	tm := compile(t, map[string]string{"teams/t/blueprints/b.yaml": containersBlueprint}, "t/b")
	in := containers(container("aaa111", "web", true), container("bbb222", "db", false))
	res, err := tm.Render(in)
	if err != nil {
		t.Fatal(err)
	}
	d := readDoc(t, res.Body)
	if len(d.Receivers) != 3 || d.Receivers["filelog/files-aaa111"] == nil || d.Receivers["filelog/files-bbb222"] == nil || d.Receivers["otlp/in"] == nil {
		t.Fatalf("receivers %v\n%s", d.Receivers, res.Body)
	}
	if inc := d.Receivers["filelog/files-bbb222"]["include"].([]any); inc[0] != "/var/lib/docker/containers/bbb222/bbb222-json.log" {
		t.Fatalf("include %v", inc)
	}
	logs := d.Service.Pipelines["logs"]
	if strings.Join(logs["receivers"], ",") != "filelog/files-bbb222,otlp/in" || strings.Join(logs["processors"], ",") != "batch/batch" {
		t.Fatalf("logs pipeline %v", logs)
	}
	own := d.Service.Pipelines["logs/files-aaa111"]
	if strings.Join(own["receivers"], ",") != "filelog/files-aaa111" || strings.Join(own["processors"], ",") != "resource/files-aaa111,batch/batch" ||
		strings.Join(own["exporters"], ",") != "debug/out" {
		t.Fatalf("per-copy pipeline %v\n%s", own, res.Body)
	}
	attrs := d.Processors["resource/files-aaa111"]["attributes"].([]any)
	want := map[string]string{"container.id": "aaa111", "container.name": "web", "container.labels.tier": "web"}
	for _, a := range attrs {
		kv := a.(map[string]any)
		if want[kv["key"].(string)] != kv["value"] || kv["action"] != "upsert" {
			t.Fatalf("attribute %v", kv)
		}
		delete(want, kv["key"].(string))
	}
	if len(want) != 0 {
		t.Fatalf("attributes missing: %v", want)
	}

	// Order of mappings and variables nobody reads do not count; a read one does.
	shuffled := containers(container("bbb222", "db", false), container("aaa111", "web", true))
	shuffled.Dynamic["docker"][0].Vars["docker.container.image.name"] = "irrelevant"
	again, err := tm.Render(shuffled)
	if err != nil || string(again.Body) != string(res.Body) || tm.Key(shuffled) != tm.Key(in) {
		t.Fatalf("a reordered input renders differently:\n%s", again.Body)
	}
	changed := containers(container("aaa111", "web", true), container("bbb222", "db", false))
	changed.Dynamic["docker"][1].Vars["docker.paths.log"] = "/elsewhere"
	if tm.Key(changed) == tm.Key(in) {
		t.Fatal("a changed path keeps the key")
	}
}

func TestRenderPerMappingEdges(t *testing.T) {
	tm := compile(t, map[string]string{"teams/t/blueprints/b.yaml": containersBlueprint}, "t/b")
	// No mapping: the receiver renders nothing, the pipeline keeps otlp.
	res, err := tm.Render(containers())
	if err != nil {
		t.Fatal(err)
	}
	if d := readDoc(t, res.Body); len(d.Receivers) != 1 || len(res.Dropped) != 1 || !strings.Contains(res.Dropped[0].String(), "no mapping") {
		t.Fatalf("no mapping: %v %v", d.Receivers, res.Dropped)
	}
	// No docker provider at all: the variable is missing, the receiver is dropped.
	res, err = tm.Render(Input{Context: Context{}})
	if err != nil || len(res.Dropped) != 1 || res.Dropped[0].Variable != "${docker.paths.log}" {
		t.Fatalf("no provider: %v %v", err, res.Dropped)
	}
	// A mapping without the variable drops its copy only.
	noPath := container("ccc333", "x", false)
	delete(noPath.Vars, "docker.paths.log")
	res, err = tm.Render(containers(container("aaa111", "web", false), noPath))
	if d := readDoc(t, res.Body); err != nil || len(d.Receivers) != 2 || len(res.Dropped) != 1 || res.Dropped[0].Receiver != "filelog/files-ccc333" {
		t.Fatalf("copy without its variable: %v %v %v", err, d.Receivers, res.Dropped)
	}
	// Hostile values stay values.
	evil := container("ddd444", "a: b\n- c\n${env:SECRET}", true)
	evil.Vars["docker.paths.log"] = "/x/${env:HOME}\n  injected: true"
	res, err = tm.Render(containers(evil))
	if err != nil {
		t.Fatal(err)
	}
	d := readDoc(t, res.Body)
	if inc := d.Receivers["filelog/files-ddd444"]["include"].([]any); inc[0] != "/x/$${env:HOME}\n  injected: true" || len(d.Receivers["filelog/files-ddd444"]) != 2 {
		t.Fatalf("include %q\n%s", inc, res.Body)
	}
	for _, a := range d.Processors["resource/files-ddd444"]["attributes"].([]any) {
		if kv := a.(map[string]any); kv["key"] == "container.name" && kv["value"] != "a: b\n- c\n$${env:SECRET}" {
			t.Fatalf("name %q", kv["value"])
		}
	}
	// An id that is not plain is made plain, stably, and different ids stay apart.
	a, b := mappingSuffix("x/y z"), mappingSuffix("x/y_z")
	if a == b || a != mappingSuffix("x/y z") || strings.ContainsAny(a, "/ ") || len(mappingSuffix(strings.Repeat("a", 200))) > 64 {
		t.Fatalf("suffixes %q %q", a, b)
	}
	// Variables of two dynamic providers, both required: no mapping has
	// both, so every copy is left out ("it would never run").
	two := strings.Replace(containersBlueprint, `include: ["${docker.paths.log}"]`, `include: ["${docker.paths.log}", "${k8s.pod.log}"]`, 1)
	tm2 := compile(t, map[string]string{"teams/t/blueprints/b.yaml": two}, "t/b")
	in := containers(container("aaa111", "web", false))
	in.Dynamic["k8s"] = []Mapping{{ID: "p1", Vars: map[string]string{"k8s.pod.log": "/p"}}}
	if res, err := tm2.Render(in); err != nil || len(res.Dropped) != 2 || strings.Contains(string(res.Body), "filelog") {
		t.Fatalf("two providers, both required: %v %+v", err, res)
	}
	// A bad processor drops the copy and says why.
	bad := container("eee555", "x", false)
	bad.Processors = []any{"not an object"}
	if res, err := tm.Render(containers(bad)); err != nil || len(res.Dropped) != 1 || !strings.Contains(res.Dropped[0].Reason, "processors[0]") {
		t.Fatalf("bad processor: %v %+v", err, res.Dropped)
	}
}

// TestMappingProcessorsAreAddFieldsOnly: a mapping can only add fields to
// what its copy collects. Any other processor type (one that listens, one
// that sends elsewhere) drops the copy with the reason, and keys are as
// literal for the collector as values.
func TestMappingProcessorsAreAddFieldsOnly(t *testing.T) {
	tm := compile(t, map[string]string{"teams/t/blueprints/b.yaml": containersBlueprint}, "t/b")
	for _, tc := range []struct {
		name string
		proc any
		want string
	}{
		{"a listener", map[string]any{"remotetap": map[string]any{"endpoint": "0.0.0.0:12001"}}, `type "remotetap" is not supported`},
		{"a resource processor", map[string]any{"resource": map[string]any{"attributes": []any{}}}, `type "resource" is not supported`},
		{"add_fields with more", map[string]any{"add_fields": map[string]any{"fields": map[string]any{}, "exporters": map[string]any{}}}, `unknown key "exporters"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := container("fff666", "x", false)
			m.Processors = []any{tc.proc}
			res, err := tm.Render(containers(m))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Dropped) != 1 || !strings.Contains(res.Dropped[0].Reason, tc.want) || strings.Contains(string(res.Body), "12001") {
				t.Fatalf("dropped %+v\n%s", res.Dropped, res.Body)
			}
		})
	}
	m := container("aaa111", "web", false)
	m.Processors = []any{map[string]any{"add_fields": map[string]any{"target": "${env:T}", "fields": map[string]any{"${env:SECRET}": "v"}}}}
	res, err := tm.Render(containers(m))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Body), "$${env:T}.$${env:SECRET}") || strings.Contains(strings.ReplaceAll(string(res.Body), "$${", ""), "${") {
		t.Fatalf("keys not made literal:\n%s", res.Body)
	}
}

// The specification's alternatives across two dynamic providers: a receiver reading
// ${docker.paths.log|local_dynamic.path|'/var/log/other'} renders once per
// mapping of each provider, each copy picking what its mapping has; a
// mapping's processors only where the copy read one of its variables; and
// with no mapping at all, once with the constant.
func TestRenderAlternativesAcrossProviders(t *testing.T) {
	bp := strings.Replace(containersBlueprint, `include: ["${docker.paths.log}"]`,
		`include: ["${docker.paths.log|local_dynamic.path|'/var/log/other'}"]`, 1)
	tm := compile(t, map[string]string{"teams/t/blueprints/b.yaml": bp}, "t/b")
	withPath := container("aaa111", "web", true)
	noPath := container("bbb222", "db", true)
	delete(noPath.Vars, "docker.paths.log")
	in := containers(withPath, noPath)
	in.Dynamic["local_dynamic"] = []Mapping{{ID: "0", Vars: map[string]string{"local_dynamic.path": "/srv/app.log"}}}
	res, err := tm.Render(in)
	if err != nil {
		t.Fatal(err)
	}
	d := readDoc(t, res.Body)
	want := map[string]string{
		"filelog/files-docker-aaa111":   "/var/lib/docker/containers/aaa111/aaa111-json.log",
		"filelog/files-docker-bbb222":   "/var/log/other",
		"filelog/files-local_dynamic-0": "/srv/app.log",
	}
	for id, path := range want {
		inc, _ := d.Receivers[id]["include"].([]any)
		if len(inc) != 1 || inc[0] != path {
			t.Errorf("%s include %v, want %s\n%s", id, inc, path, res.Body)
		}
	}
	if _, ok := d.Processors["resource/files-docker-aaa111"]; !ok {
		t.Errorf("the copy that read its mapping has no processor:\n%s", res.Body)
	}
	if _, ok := d.Processors["resource/files-docker-bbb222"]; ok {
		t.Errorf("the copy that fell back to the constant has the mapping's processor:\n%s", res.Body)
	}
	// No mapping at all: once, as itself, with the constant.
	res, err = tm.Render(Input{Context: Context{}, Dynamic: map[string][]Mapping{"docker": nil}})
	if err != nil {
		t.Fatal(err)
	}
	if inc, _ := readDoc(t, res.Body).Receivers["filelog/files"]["include"].([]any); len(inc) != 1 || inc[0] != "/var/log/other" || len(res.Dropped) != 0 {
		t.Fatalf("no mapping: %v %v\n%s", inc, res.Dropped, res.Body)
	}
}

func TestParseDocument(t *testing.T) {
	d, err := ParseDocument([]byte(`{"context": {"site.id": "1"}, "dynamic": {"docker": [{"id": "a", "mapping": {"docker.x": "y"}, "processors": [{"batch": {}}]}]}, "source": "attributes+updater"}`))
	if err != nil || d.Context["site.id"] != "1" || d.Dynamic["docker"][0].Vars["docker.x"] != "y" || d.Source != "attributes+updater" {
		t.Fatalf("%+v %v", d, err)
	}
	if d, err := ParseDocument([]byte(`{"site.id": "1", "context": "a string is a variable"}`)); err != nil || d.Context["context"] != "a string is a variable" {
		t.Fatalf("flat: %+v %v", d, err)
	}
	for in, want := range map[string]string{
		`[1]`: "not a JSON object", `null`: "got null", `{"a": 1}`: `"a" is 1`,
		`{"context": {}, "dynamic": {"d": [{"id": "x"}, {"id": "x"}]}}`: "duplicate id",
		`{"context": {}, "dynamic": {"d": [{"mapping": {}}]}}`:          "has no id",
		`{"context": {}, "extra": 1}`:                                   "unknown field",
	} {
		if _, err := ParseDocument([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}
