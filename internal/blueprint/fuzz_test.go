package blueprint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	yaml "go.yaml.in/yaml/v3"
)

const (
	fuzzExporter  = "name: exp\nclass: exporter\ntype: otlp\nversion: 1\nowner: o\n"
	fuzzBlueprint = `name: bp
version: 1
owner: o
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
pipelines:
  traces:
    - component: in
    - component: a/fz@1
    - component: a/exp@1
`
	fuzzComponent = "name: fz\nclass: processor\ntype: transform\nversion: 1\nowner: o\nconfig:\n  a: [1, \"2\", x: y]\n  b: |\n    two\n    lines\n  'c: d': !!str 3\n  e: ${env:HOME}\n  f: ~\n"
)

// FuzzLoad feeds arbitrary bytes to the loader. The first byte picks the
// file the rest replaces in an otherwise valid estate: 0 the Blueprint, 1
// the shared Component it uses, 2 a Requirement. The loader must never
// panic and must return either an estate or LoadErrors naming a file;
// whatever loads must judge and render without panicking, and every
// rendered Component config must read back to exactly the authored values.
func FuzzLoad(f *testing.F) {
	err := filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") || strings.Contains(p, string(filepath.Separator)+"want") {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil {
			f.Add(append([]byte{0}, data...))
			f.Add(append([]byte{1}, data...))
		}
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append([]byte{0}, fuzzBlueprint...))
	f.Add(append([]byte{1}, fuzzComponent...))
	f.Add([]byte("\x02name: req\nversion: 2\nowner: o\ndescription: d\n"))
	f.Add([]byte("\x00a: &x [*x]\n"))
	f.Add([]byte("\x01<<: {name: fz}\n"))
	f.Add([]byte("\x00name: bp\nversion: 99999999999999999999999\n"))

	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		files := map[string]string{
			"teams/a/blueprints/bp.yaml":    fuzzBlueprint,
			"teams/a/components/exp.yaml":   fuzzExporter,
			"teams/a/components/fz.yaml":    fuzzComponent,
			"teams/a/requirements/req.yaml": "name: req\nversion: 1\nowner: o\n",
		}
		target := []string{"teams/a/blueprints/bp.yaml", "teams/a/components/fz.yaml", "teams/a/requirements/req.yaml"}[int(in[0])%3]
		files[target] = string(in[1:])
		mfs := fstest.MapFS{}
		for p, c := range files {
			mfs[p] = &fstest.MapFile{Data: []byte(c)}
		}
		loadBothWays(t, func() (*Estate, error) { return LoadSources([]Source{{Dir: "fuzz", FS: mfs}}) })
		est, err := LoadSources([]Source{{Dir: "fuzz", FS: mfs}})
		if (est == nil) == (err == nil) {
			t.Fatalf("Load returned estate=%v err=%v: want exactly one", est != nil, err)
		}
		if err != nil {
			var les LoadErrors
			if !errors.As(err, &les) || len(les) == 0 {
				t.Fatalf("err = %v, want LoadErrors", err)
			}
			for _, e := range les {
				if e.File == "" || e.Message == "" {
					t.Fatalf("load error without file or message: %+v", e)
				}
			}
			return
		}
		_ = est.Judge()
		for _, id := range est.BlueprintIDs() {
			cfg, err := est.Render(context.Background(), id, nil)
			if err != nil {
				continue
			}
			checkRoundTrip(t, est, id, cfg)
		}
	})
}

// checkRoundTrip reads a rendered config back and compares every
// Component's config with the authored one.
func checkRoundTrip(t *testing.T, est *Estate, id string, cfg []byte) {
	t.Helper()
	var got map[string]map[string]any
	if err := yaml.Unmarshal(cfg, &got); err != nil {
		t.Fatalf("render of %s is not valid YAML: %v\n%s", id, err, cfg)
	}
	b := est.Blueprints[id]
	var comps []*Component
	comps = append(comps, b.Components...)
	for _, lane := range append(b.Lanes, b.Extensions) {
		for _, en := range lane.Entries {
			if c := est.Components[en.Ref.ID()]; en.Ref.Shared() && c != nil {
				comps = append(comps, c)
			}
		}
	}
	for _, c := range comps {
		var want any
		if err := c.Config.Decode(&want); err != nil {
			continue // the authored value itself does not decode; nothing to compare
		}
		sec := sectionOf[c.Class]
		if w, ok := want.(map[string]any); ok && len(w) == 0 {
			want = map[string]any{}
		}
		have := got[sec][c.RenderedID()]
		if have == nil {
			have = map[string]any{}
		}
		if fmt.Sprintf("%#v", have) != fmt.Sprintf("%#v", want) {
			t.Fatalf("config of %s does not round-trip:\nauthored %#v\nrendered %#v\n%s", c.RenderedID(), want, have, cfg)
		}
	}
}
