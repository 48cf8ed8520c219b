package blueprint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// TestRender renders every Blueprint of every estate in testdata/render and
// compares the config (want/<team>.<name>.yaml) or the refusal
// (want/<team>.<name>.err) with its golden file.
func TestRender(t *testing.T) {
	for _, name := range caseDirs(t, "render") {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "render", name)
			est, err := Load(caseRoots(t, dir)...)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if err := os.MkdirAll(filepath.Join(dir, "want"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, id := range est.BlueprintIDs() {
				base := filepath.Join(dir, "want", strings.ReplaceAll(id, "/", "."))
				cfg, err := est.Render(context.Background(), id, nil)
				var refused *RefusedError
				switch {
				case errors.As(err, &refused):
					golden(t, base+".err", []byte(relativise(err.Error(), dir)+"\n"))
				case err != nil:
					t.Fatalf("render %s: unexpected error type %T: %v", id, err, err)
				default:
					var parsed map[string]any
					if err := yaml.Unmarshal(cfg, &parsed); err != nil {
						t.Fatalf("render %s produced invalid YAML: %v\n%s", id, err, cfg)
					}
					golden(t, base+".yaml", cfg)
				}
			}
		})
	}
}

func TestRenderUnknownBlueprint(t *testing.T) {
	est, err := Load(filepath.Join("testdata", "render", "seed-gateway", "root"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := est.Render(context.Background(), "data-flow/nope", nil); !errors.Is(err, ErrUnknownBlueprint) {
		t.Fatalf("err = %v, want ErrUnknownBlueprint", err)
	}
}
