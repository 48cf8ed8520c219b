package blueprint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/internal/testenv"
)

// writeEstate generates teams × 10 Blueprints × 10 shared Components under
// dir. Every Blueprint mixes local and shared Components, crosses into the
// next team's library, and carries a satisfies claim, so load, judge and
// render all do their full work.
func writeEstate(tb testing.TB, dir string, teams int) {
	tb.Helper()
	kinds := []struct{ name, class, typ, config string }{
		{"limit", "processor", "memory_limiter", "  check_interval: 1s\n  limit_mib: 512\n"},
		{"batch", "processor", "batch", "  timeout: 5s\n"},
		{"drop", "processor", "filter", "  error_mode: ignore\n"},
		{"attrs", "processor", "attributes", "  actions:\n    - key: env\n      value: prod\n      action: upsert\n"},
		{"k8s", "processor", "k8sattributes", ""},
		{"gw", "exporter", "otlp", "  endpoint: 127.0.0.1:4317\n  tls:\n    insecure: true\n"},
		{"dbg", "exporter", "debug", "  verbosity: basic\n"},
		{"s2m", "connector", "spanmetrics", ""},
		{"health", "extension", "health_check", "  endpoint: 127.0.0.1:13133\n"},
		{"pprof", "extension", "pprof", ""},
	}
	write := func(rel, content string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	for t := range teams {
		team := fmt.Sprintf("team%04d", t)
		next := fmt.Sprintf("team%04d", (t+1)%teams)
		for _, k := range kinds {
			cfg := ""
			if k.config != "" {
				cfg = "config:\n" + k.config
			}
			write("teams/"+team+"/components/"+k.name+".yaml", fmt.Sprintf(
				"name: %s\nclass: %s\ntype: %s\nversion: 2\nowner: %s-owners\ndescription: shared %s\n%s",
				k.name, k.class, k.typ, team, k.typ, cfg))
		}
		write("teams/"+team+"/requirements/logs-delivered.yaml",
			"name: logs-delivered\nversion: 2\nowner: "+team+"-owners\ndescription: logs reach the gateway\n")
		for b := range 10 {
			var s strings.Builder
			fmt.Fprintf(&s, "name: bp%d\nversion: 3\nowner: %s-owners\n", b, team)
			s.WriteString("components:\n  - name: in\n    class: receiver\n    type: otlp\n    version: 1\n    config:\n      protocols:\n        grpc:\n          endpoint: 127.0.0.1:4317\n")
			s.WriteString("  - name: tag\n    class: processor\n    type: resource\n    version: 1\n    config:\n      attributes:\n        - key: blueprint\n          value: bp\n          action: upsert\n")
			s.WriteString("pipelines:\n  traces:\n    - component: in\n")
			fmt.Fprintf(&s, "    - component: %s/limit@2\n    - component: %s/drop@2\n    - component: tag\n    - component: %s/k8s@2\n", team, team, team)
			fmt.Fprintf(&s, "    - component: %s/batch@2\n    - component: %s/gw@2\n    - component: %s/s2m@2\n", team, next, team)
			fmt.Fprintf(&s, "  metrics:\n    - component: %s/s2m@2\n    - component: %s/limit@2\n    - component: %s/batch@2\n    - component: %s/dbg\n      track: head\n", team, team, team, team)
			fmt.Fprintf(&s, "  logs:\n    - component: in\n    - component: %s/attrs@2\n    - component: %s/gw@2\n", team, next)
			fmt.Fprintf(&s, "extensions:\n  - component: %s/health@2\n  - component: %s/pprof\n    track: head\n", team, team)
			fmt.Fprintf(&s, "satisfies:\n  - logs-delivered@%d\n", 1+b%2) // half drift
			write(fmt.Sprintf("teams/%s/blueprints/bp%d.yaml", team, b), s.String())
		}
	}
}

// loadJudgeRenderAll is the measured work: the full load, every finding,
// and a render of every Blueprint.
func loadJudgeRenderAll(tb testing.TB, dir string) (blueprints, findings int) {
	est, err := Load(dir)
	if err != nil {
		tb.Fatal(err)
	}
	fs := est.Judge()
	for _, id := range est.BlueprintIDs() {
		if _, err := est.Render(context.Background(), id, nil); err != nil {
			tb.Fatalf("render %s: %v", id, err)
		}
	}
	return len(est.Blueprints), len(fs)
}

// BenchmarkLoadJudgeRender measures load + judge + render of an estate of
// N teams × 10 Blueprints × 10 shared Components, at three sizes so that
// growth can be compared in one run (goal: ≤ 2 s at 1 000 teams, linear).
func BenchmarkLoadJudgeRender(b *testing.B) {
	for _, teams := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("teams=%d", teams), func(b *testing.B) {
			dir := b.TempDir()
			writeEstate(b, dir, teams)
			var bps int
			cpu0 := testenv.ProcessCPU()
			for b.Loop() {
				bps, _ = loadJudgeRenderAll(b, dir)
			}
			cpu := testenv.ProcessCPU() - cpu0
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(bps), "ns/blueprint")
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

// TestGeneratedEstate keeps the benchmark's estate honest: it loads, every
// Blueprint renders, and the planted drift is found.
func TestGeneratedEstate(t *testing.T) {
	dir := t.TempDir()
	writeEstate(t, dir, 3)
	bps, findings := loadJudgeRenderAll(t, dir)
	if bps != 30 {
		t.Errorf("loaded %d Blueprints, want 30", bps)
	}
	if findings != 15 { // one library_drift claim in every other Blueprint
		t.Errorf("got %d findings, want 15", findings)
	}
}
