package config

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/agent/providers"
	"github.com/myriarch/myriarch/internal/vars"
)

// TestSeed001ProvidersExamples loads every `providers:` example of seed
// 001, verbatim from testdata/seed001, as the providers section of an
// updater.yaml, and runs the providers it configures.
func TestSeed001ProvidersExamples(t *testing.T) {
	for _, tc := range []struct {
		file  string
		check func(t *testing.T, cfg *Config, s snapshot)
	}{
		{"local-and-local-dynamic.yaml", func(t *testing.T, cfg *Config, s snapshot) {
			if s.Context["local"]["foo"] != "bar" {
				t.Errorf("${local.foo} = %v, want bar", s.Context["local"]["foo"])
			}
			got := render(t, s, `inputs: [{id: in, key: "${local_dynamic.item}"}]`)
			if len(got) != 2 || got[0]["key"] != "key1" || got[1]["key"] != "key2" {
				t.Errorf("${local_dynamic.item} renders %v, want one input per item: key1, key2", got)
			}
		}},
		{"docker-disabled.yaml", func(t *testing.T, cfg *Config, s snapshot) {
			if cfg.Providers.Docker.Enabled == nil || *cfg.Providers.Docker.Enabled {
				t.Fatalf("providers.docker.enabled = %v, want false", cfg.Providers.Docker.Enabled)
			}
			for _, m := range s.Mappings {
				if m.Provider == "docker" {
					t.Errorf("a disabled docker provider published %+v", m)
				}
			}
			if s.Context["host"] == nil || s.Context["agent"] == nil {
				t.Errorf("the other providers stay enabled: %v", s.Context)
			}
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			example, err := os.ReadFile(filepath.Join("testdata", "seed001", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			cfg, problems := Parse(append([]byte(minimal), example...))
			if len(problems) > 0 {
				t.Fatalf("the providers specification's example refused: %v", problems)
			}
			var buf bytes.Buffer
			if err := providers.Inspect(context.Background(), cfg.Providers, false, &buf, nil); err != nil {
				t.Fatal(err)
			}
			var s snapshot
			if err := json.Unmarshal(buf.Bytes(), &s); err != nil {
				t.Fatalf("inspect output: %v\n%s", err, buf.String())
			}
			tc.check(t, cfg, s)
		})
	}
}

// snapshot is what `inspect --providers` prints.
type snapshot struct {
	Context  map[string]map[string]any `json:"context"`
	Mappings []vars.Mapping            `json:"mappings"`
}

// render renders a document's inputs with a snapshot's data.
func render(t *testing.T, s snapshot, doc string) []map[string]any {
	t.Helper()
	ctx := map[string]any{}
	for k, v := range s.Context {
		ctx[k] = v
	}
	data, err := vars.NewData(ctx, s.Mappings)
	if err != nil {
		t.Fatal(err)
	}
	var d any
	if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatal(err)
	}
	res, err := vars.Engine{}.RenderDocument(d, data)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, in := range res.Document["inputs"].([]any) {
		out = append(out, in.(map[string]any))
	}
	return out
}
