package hostcontext

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/blueprint"
	"github.com/myriarch/myriarch/internal/configrender"
)

// The examples of the specification "Support variable substitution from
// providers", each as the updater reports it and the server parses it,
// rendered into a collector configuration the way the specification shows its
// Elastic Agent inputs: a logfile input is a filelog receiver here.

// seedDocker is the specification's Docker provider example, verbatim: two
// containers, each with its log path and an add_fields processor in the
// specification's shorthand.
const seedDocker = `{"dynamic": {"docker": [
    {
       "id": "1",
       "mapping": {"id": "1", "paths": {"log": "/var/log/containers/1.log"}},
       "processors": {"add_fields": {"container.name": "my-container"}}
    },
    {
        "id": "2",
        "mapping": {"id": "2", "paths": {"log": "/var/log/containers/2.log"}},
        "processors": {"add_fields": {"container.name": "other-container"}}
    }
]}}`

// seedLocal is the specification's providers configuration (local vars and
// local_dynamic vars) as the updater reports it.
const seedLocal = `{"context": {"local": {"foo": "bar"}},
  "dynamic": {"local_dynamic": [{"id": "0", "mapping": {"item": "key1"}}, {"id": "1", "mapping": {"item": "key2"}}]}}`

// seedBlueprint holds the specification's inputs: a fixed path, a path from a
// variable no provider has, a path from the Docker provider, and the
// alternatives with a constant.
const seedBlueprint = `name: seed
version: 1
owner: o
components:
  - name: foo
    class: receiver
    type: filelog
    version: 1
    config:
      include: ["/var/log/foo"]
  - name: unknown
    class: receiver
    type: filelog
    version: 1
    config:
      include: ["${ unknown.key }"]
  - name: containers
    class: receiver
    type: filelog
    version: 1
    config:
      include: ["${docker.paths.log}"]
  - name: other
    class: receiver
    type: filelog
    version: 1
    config:
      include: ["${docker.paths.log|kubernetes.container.paths.log|'/var/log/other'}"]
  - name: local
    class: receiver
    type: filelog
    version: 1
    config:
      include: ["/var/log/${local.foo}/${local_dynamic.item}.log"]
  - name: out
    class: exporter
    type: debug
    version: 1
pipelines:
  logs:
    - component: foo
    - component: unknown
    - component: containers
    - component: other
    - component: local
    - component: out
`

type seedDoc struct {
	Receivers  map[string]map[string][]string `yaml:"receivers"`
	Processors map[string]struct {
		Attributes []map[string]any `yaml:"attributes"`
	} `yaml:"processors"`
	Service struct {
		Pipelines map[string]map[string][]string `yaml:"pipelines"`
	} `yaml:"service"`
}

func renderSeed(t *testing.T, snapshots ...string) (seedDoc, *configrender.Result) {
	t.Helper()
	root := t.TempDir()
	p := filepath.Join(root, "teams/t/blueprints/seed.yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(seedBlueprint), 0o644); err != nil {
		t.Fatal(err)
	}
	est, err := blueprint.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := configrender.Compile(est, "t/seed", nil)
	if err != nil {
		t.Fatal(err)
	}
	in := configrender.Input{Context: configrender.Context{}, Dynamic: map[string][]configrender.Mapping{}}
	for _, raw := range snapshots {
		s, err := Parse([]byte(raw))
		if err != nil {
			t.Fatalf("the specification's snapshot is refused: %v", err)
		}
		for k, v := range s.Context {
			in.Context[k] = v
		}
		for p, ms := range s.Dynamic {
			in.Dynamic[p] = ms
		}
	}
	res, err := tm.Render(in)
	if err != nil {
		t.Fatal(err)
	}
	var d seedDoc
	if err := yaml.Unmarshal(res.Body, &d); err != nil {
		t.Fatalf("%v\n%s", err, res.Body)
	}
	return d, res
}

func TestSeed001Examples(t *testing.T) {
	d, res := renderSeed(t, seedDocker, seedLocal)
	wantInclude := map[string]string{
		"filelog/foo":          "/var/log/foo",
		"filelog/containers-1": "/var/log/containers/1.log",
		"filelog/containers-2": "/var/log/containers/2.log",
		"filelog/other-1":      "/var/log/containers/1.log",
		"filelog/other-2":      "/var/log/containers/2.log",
		"filelog/local-0":      "/var/log/bar/key1.log",
		"filelog/local-1":      "/var/log/bar/key2.log",
	}
	for id, path := range wantInclude {
		if inc := d.Receivers[id]["include"]; len(inc) != 1 || inc[0] != path {
			t.Errorf("%s include %v, want %s\n%s", id, inc, path, res.Body)
		}
	}
	// "When an input uses a variable substitution that is not present in
	// the current key/value mapping being evaluated that input is removed":
	// and said so.
	if _, ok := d.Receivers["filelog/unknown"]; ok || len(res.Dropped) != 1 || res.Dropped[0].Variable != "${ unknown.key }" {
		t.Errorf("the unknown key's receiver: %v, dropped %+v", d.Receivers["filelog/unknown"], res.Dropped)
	}
	// Each container's processors apply to its copy only, as the specification's
	// generated configuration shows.
	for _, c := range []struct{ id, name string }{{"containers-1", "my-container"}, {"containers-2", "other-container"}} {
		attrs := d.Processors["resource/"+c.id].Attributes
		if len(attrs) != 1 || attrs[0]["key"] != "container.name" || attrs[0]["value"] != c.name {
			t.Errorf("processor of %s: %v\n%s", c.id, attrs, res.Body)
		}
		if pl := d.Service.Pipelines["logs/"+c.id]; len(pl["receivers"]) != 1 || pl["receivers"][0] != "filelog/"+c.id || pl["processors"][0] != "resource/"+c.id {
			t.Errorf("pipeline of %s: %v", c.id, pl)
		}
	}
}

// Without a container, the alternatives fall back to the constant, and no
// processor is added where no substitution was made.
func TestSeed001ConstantWithoutContainers(t *testing.T) {
	d, res := renderSeed(t, `{"dynamic": {"docker": []}}`)
	if inc := d.Receivers["filelog/other"]["include"]; len(inc) != 1 || inc[0] != "/var/log/other" {
		t.Fatalf("other: %v\n%s", inc, res.Body)
	}
	if len(d.Processors) != 0 {
		t.Fatalf("processors without a substitution: %v", d.Processors)
	}
	var reasons []string
	for _, dr := range res.Dropped {
		reasons = append(reasons, dr.String())
	}
	if !strings.Contains(strings.Join(reasons, "; "), "filelog/containers dropped: the dynamic provider docker has no mapping") {
		t.Fatalf("dropped %v", reasons)
	}
}
