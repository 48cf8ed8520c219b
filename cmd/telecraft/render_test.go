package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/test/peers/peerbuild"
)

var blueprintTestdata = filepath.Join("..", "..", "internal", "blueprint", "testdata")

func render(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(append([]string{"render"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestRenderToStdout(t *testing.T) {
	dir := filepath.Join(blueprintTestdata, "render", "seed-gateway")
	want, err := os.ReadFile(filepath.Join(dir, "want", "data-flow.gateway-standard.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := render("--root", filepath.Join(dir, "root"), "data-flow/gateway-standard")
	if code != 0 || out != string(want) {
		t.Fatalf("exit %d, stderr %q\n--- got\n%s\n--- want\n%s", code, errOut, out, want)
	}
}

// TestRenderToFileFlagsAfterID writes the config with -o given after the
// Blueprint id.
func TestRenderToFileFlagsAfterID(t *testing.T) {
	dir := filepath.Join(blueprintTestdata, "render", "track-head-and-extensions-only")
	out := filepath.Join(t.TempDir(), "collector.yaml")
	code, stdout, errOut := render("--root", filepath.Join(dir, "root"), "a/bp", "-o", out)
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(dir, "want", "a.bp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("-o file differs:\n%s", got)
	}
}

func TestRenderFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"refused: unresolved entries", []string{"--root", filepath.Join(blueprintTestdata, "render", "unresolved-refused", "root"), "a/bp"},
			1, "a/retracted does not exist"},
		{"refused: collision", []string{"--root", filepath.Join(blueprintTestdata, "render", "rendered-id-collision", "root"), "a/bp"},
			1, `rendered id "otlp/a.exp" collides`},
		{"other team's problem does not block", []string{"--root", filepath.Join(blueprintTestdata, "render", "team-isolation", "root"), "a/bp"},
			0, ""},
		{"load errors", []string{"--root", filepath.Join(blueprintTestdata, "load", "every-error-reported", "root"), "a/bp"},
			1, "other.yaml:2: Blueprint version must be at least 1"},
		{"unknown Blueprint", []string{"--root", filepath.Join(blueprintTestdata, "render", "seed-gateway", "root"), "data-flow/nope"},
			1, "no such Blueprint"},
		{"drift warning", []string{"--root", filepath.Join(blueprintTestdata, "findings", "library-drift-claim-behind", "root"), "a/bp"},
			0, "warning: library_drift finding [satisfies] (owner team-a)"},
		{"no id", []string{"--root", "x"}, 2, "exactly one"},
		{"two ids", []string{"--root", "x", "a/b", "c/d"}, 2, "exactly one"},
		{"bad id", []string{"--root", "x", "just-a-name"}, 2, "not a Blueprint id"},
		{"no root", []string{"a/b"}, 2, "--root is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := render(tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, errOut, tc.code, tc.stderr)
			}
		})
	}
}

// testCollectorEnv names an otelcol executable to validate rendered configs
// with instead of the e2e peer collector.
const testCollectorEnv = "MYRIARCH_TEST_COLLECTOR"

// testCollector returns the collector executable to validate with: the one
// named by $MYRIARCH_TEST_COLLECTOR, else the ocb-built e2e peer collector
// (peerbuild builds it on first use, minutes when the cache is cold, and
// `make test` builds it for the e2e suite anyway).
func testCollector(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(testCollectorEnv); bin != "" {
		return bin
	}
	// A cold build can outlast go test's timeout on a loaded machine: stop
	// it cleanly before the test binary panics.
	deadline := time.Now().Add(40 * time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-30 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	log := slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	p, err := peerbuild.Ensure(ctx, log)
	if err != nil {
		t.Fatalf("build the e2e peers: %v\n(run `make peers` first, give go test a longer -timeout, or set %s to an otelcol executable)", err, testCollectorEnv)
	}
	c, err := p.Collector(peerbuild.VersionM1)
	if err != nil {
		t.Fatal(err)
	}
	return c.Executable
}

type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestRenderValidatesWithRealCollector renders a Blueprint made of the
// Components our test collector has and runs the collector's own
// `validate --config` on the result. The collector is the ocb-built e2e
// peer (or $MYRIARCH_TEST_COLLECTOR).
func TestRenderValidatesWithRealCollector(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the e2e peer collector, which may have to be built; not in -short mode")
	}
	bin := testCollector(t)
	comps, err := exec.Command(bin, "components").CombinedOutput()
	if err != nil {
		t.Fatalf("%s components: %v\n%s", bin, err, comps)
	}
	has := func(typ string) bool { return bytes.Contains(comps, []byte("name: "+typ+"\n")) }
	for _, typ := range []string{"otlp", "batch", "debug", "health_check"} {
		if !has(typ) {
			t.Fatalf("test collector lacks %s; components:\n%s", typ, comps)
		}
	}

	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("teams/obs/components/debug-out.yaml", "name: debug-out\nclass: exporter\ntype: debug\nversion: 1\nowner: obs\nconfig:\n  verbosity: basic\n")
	write("teams/obs/components/health.yaml", "name: health\nclass: extension\ntype: health_check\nversion: 1\nowner: obs\nconfig:\n  endpoint: 127.0.0.1:13133\n")
	limiter, limiterEntry := "", ""
	if has("memory_limiter") {
		limiter = "  - name: guard\n    class: processor\n    type: memory_limiter\n    version: 1\n    config:\n      check_interval: 1s\n      limit_mib: 256\n"
		limiterEntry = "    - component: guard\n"
	}
	write("teams/obs/blueprints/edge.yaml", "name: edge\nversion: 1\nowner: obs\ncomponents:\n"+
		"  - name: in\n    class: receiver\n    type: otlp\n    version: 1\n    config:\n      protocols:\n        grpc:\n          endpoint: 127.0.0.1:4317\n        http:\n          endpoint: 127.0.0.1:4318\n"+
		limiter+
		"  - name: batcher\n    class: processor\n    type: batch\n    version: 1\n"+
		"pipelines:\n  traces:\n    - component: in\n"+limiterEntry+"    - component: batcher\n    - component: obs/debug-out@1\n"+
		"  metrics:\n    - component: in\n"+limiterEntry+"    - component: batcher\n    - component: obs/debug-out@1\n"+
		"  logs:\n    - component: in\n"+limiterEntry+"    - component: batcher\n    - component: obs/debug-out@1\n"+
		"extensions:\n  - component: obs/health@1\n")

	cfg := filepath.Join(t.TempDir(), "collector.yaml")
	if code, _, errOut := render("--root", root, "obs/edge", "-o", cfg); code != 0 {
		t.Fatalf("render: exit %d\n%s", code, errOut)
	}
	out, err := exec.Command(bin, "validate", "--config", cfg).CombinedOutput()
	if err != nil {
		rendered, _ := os.ReadFile(cfg)
		t.Fatalf("collector rejected the rendered config: %v\n%s\n--- config\n%s", err, out, rendered)
	}

	// The same Blueprint with a config key the debug exporter does not
	// know must be rejected, which shows validate really read our config.
	write("teams/obs/components/debug-out.yaml", "name: debug-out\nclass: exporter\ntype: debug\nversion: 1\nowner: obs\nconfig:\n  verbosity: basic\n  no_such_setting: true\n")
	bad := filepath.Join(t.TempDir(), "collector.yaml")
	if code, _, errOut := render("--root", root, "obs/edge", "-o", bad); code != 0 {
		t.Fatalf("render: exit %d\n%s", code, errOut)
	}
	if out, err := exec.Command(bin, "validate", "--config", bad).CombinedOutput(); err == nil || !bytes.Contains(out, []byte("no_such_setting")) {
		t.Fatalf("collector accepted a config with an unknown debug exporter key: %v\n%s", err, out)
	}
}
