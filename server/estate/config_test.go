package estate

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/internal/testenv"
)

const blueprintYAML = `name: gw
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
pipelines:
  logs:
    - component: in
    - component: out
`

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFleetConfig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string // problems, as "file:line: text" substrings; none means it loads
	}{
		{name: "config only", files: map[string]string{
			"teams/df/blueprints/gw.yaml": blueprintYAML,
			"fleets/edge.yaml":            "name: edge\nselector: {site.type: edge}\nofflineAfter: 10m\nconfig:\n  blueprint: df/gw\n  bridges: true\n"}},
		{name: "telemetry only", files: map[string]string{
			"fleets/edge.yaml": "name: edge\ntelemetry:\n  metrics: {endpoint: \"https://otlp.example.com:4318/v1/metrics\", headers: {Authorization: Bearer x}}\n"}},
		{name: "telemetry endpoints", files: map[string]string{
			"fleets/edge.yaml": "name: edge\ntelemetry:\n" +
				"  metrics: {endpoint: \"otlp.example.com:4318\"}\n" +
				"  logs: {endpoint: \"https://otlp.example.com/a/../../etc/passwd\"}\n" +
				"  traces: {endpoint: \"https://u:p@otlp.example.com/%2e%2e/x\"}\n"},
			want: []string{`fleets/edge.yaml:2: telemetry.metrics.endpoint "otlp.example.com:4318": the scheme must be http or https`,
				`fleets/edge.yaml:2: telemetry.logs.endpoint "https://otlp.example.com/a/../../etc/passwd" has a . or .. path segment`,
				`telemetry.traces.endpoint "https://u:p@otlp.example.com/%2e%2e/x" carries user information; put credentials in headers`,
				`telemetry.traces.endpoint "https://u:p@otlp.example.com/%2e%2e/x" has a . or .. path segment`}},
		{name: "telemetry headers and no signal", files: map[string]string{
			"fleets/edge.yaml": "name: edge\ntelemetry:\n  metrics: {endpoint: \"http://127.0.0.1:4318\", headers: {\"Bad Name\": x, X-Key: \"a\\nb\"}}\n",
			"fleets/core.yaml": "name: core\ntelemetry: {}\n"},
			want: []string{`fleets/edge.yaml:2: telemetry.metrics.headers: "Bad Name" is not a header name`,
				"fleets/edge.yaml:2: telemetry.metrics.headers.X-Key holds a line break or NUL",
				"fleets/core.yaml:2: telemetry names no signal"}},
		{name: "telemetry values the Supervisor cannot take", files: map[string]string{
			"fleets/edge.yaml": "name: edge\ntelemetry:\n  metrics: {endpoint: \"http://127.0.0.1:4318/a,b\", headers: {X-Key: \"a: b\"}}\n"},
			want: []string{`fleets/edge.yaml:2: telemetry.metrics.endpoint "http://127.0.0.1:4318/a,b" holds ',', which the collector's Supervisor cannot take`,
				"fleets/edge.yaml:2: telemetry.metrics.headers.X-Key holds a character the collector's Supervisor cannot take"}},
		{name: "telemetry without endpoint", files: map[string]string{
			"fleets/edge.yaml": "name: edge\ntelemetry:\n  logs: {headers: {a: b}}\n"},
			want: []string{"fleets/edge.yaml:2: telemetry.logs.endpoint is required"}},
		{name: "offlineAfter too short", files: map[string]string{
			"teams/df/blueprints/gw.yaml": blueprintYAML,
			"fleets/edge.yaml":            "name: edge\nofflineAfter: 500ms\nconfig:\n  blueprint: df/gw\n"},
			want: []string{"fleets/edge.yaml:2: offlineAfter 500ms is shorter than 1s"}},
		{name: "offlineAfter not a duration", files: map[string]string{
			"teams/df/blueprints/gw.yaml": blueprintYAML,
			"fleets/edge.yaml":            "name: edge\nofflineAfter: soon\nconfig:\n  blueprint: df/gw\n"},
			want: []string{"fleets/edge.yaml:2:", "soon"}},
		{name: "unknown blueprint", files: map[string]string{
			"teams/df/blueprints/gw.yaml": blueprintYAML,
			"fleets/edge.yaml":            "name: edge\nconfig:\n  blueprint: df/nope\n"},
			want: []string{`fleets/edge.yaml:2: config.blueprint "df/nope" does not exist`}},
		{name: "no teams tree", files: map[string]string{
			"fleets/edge.yaml": "name: edge\nconfig:\n  blueprint: df/gw\n"},
			want: []string{`fleets/edge.yaml:2: config.blueprint "df/gw": the estate has no Blueprints`}},
		{name: "not an id", files: map[string]string{
			"teams/df/blueprints/gw.yaml": blueprintYAML,
			"fleets/edge.yaml":            "name: edge\nconfig:\n  blueprint: gw\n"},
			want: []string{`fleets/edge.yaml:2: config.blueprint "gw" is not a Blueprint id`}},
		{name: "empty config", files: map[string]string{
			"teams/df/blueprints/gw.yaml": blueprintYAML,
			"fleets/edge.yaml":            "name: edge\nconfig: {}\n"},
			want: []string{"fleets/edge.yaml:2: config.blueprint is required"}},
		{name: "unknown config key", files: map[string]string{
			"teams/df/blueprints/gw.yaml": blueprintYAML,
			"fleets/edge.yaml":            "name: edge\nconfig:\n  blueprint: df/gw\n  bridge: true\n"},
			want: []string{"fleets/edge.yaml:4: unknown field bridge"}},
		{name: "neither package nor config", files: map[string]string{
			"fleets/edge.yaml": "name: edge\n"},
			want: []string{"fleets/edge.yaml:1: package is required (or config"}},
		{name: "blueprint load error", files: map[string]string{
			"teams/df/blueprints/gw.yaml": "name: gw\nversion: 0\n",
			"fleets/edge.yaml":            "name: edge\nconfig:\n  blueprint: df/gw\n"},
			want: []string{"teams/df/blueprints/gw.yaml", "config.blueprint"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			e, err := Load(dir)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if tc.name == "telemetry only" {
					if d := e.Fleets[0].Telemetry.Metrics; d == nil || d.Headers["Authorization"] != "Bearer x" {
						t.Fatalf("telemetry %+v", e.Fleets[0].Telemetry)
					}
					return
				}
				if f := e.Fleets[0]; f.Config == nil || f.Config.Blueprint != "df/gw" || !f.Config.Bridges || e.Blueprints == nil || f.OfflineAfter != 10*time.Minute {
					t.Fatalf("fleet %+v", f)
				}
				return
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a load error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nlacks %q", err, w)
				}
			}
		})
	}
}

func TestRevision(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"fleets/a.yaml": "x", "inventory/b.yaml": "y"})
	r1, err := Revision(dir)
	if err != nil || !strings.HasPrefix(r1, "sha256:") {
		t.Fatalf("%q %v", r1, err)
	}
	if r2, _ := Revision(dir); r2 != r1 {
		t.Fatal("the digest is not stable")
	}
	writeTree(t, dir, map[string]string{".hidden/x": "z"})
	if r2, _ := Revision(dir); r2 != r1 {
		t.Fatal("hidden files count")
	}
	writeTree(t, dir, map[string]string{"fleets/a.yaml": "changed"})
	if r2, _ := Revision(dir); r2 == r1 {
		t.Fatal("a changed file keeps the digest")
	}

	testenv.Tool(t, "git", "git")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "estate")
	head := git("rev-parse", "HEAD")
	if r, err := Revision(dir); err != nil || r != head {
		t.Fatalf("revision %q, HEAD %q (%v)", r, head, err)
	}
	// Uncommitted changes make the files the revision, and a new one.
	writeTree(t, dir, map[string]string{"fleets/a.yaml": "name: a\npackage: p\n"})
	dirty, _ := Revision(dir)
	if !strings.HasPrefix(dirty, "sha256:") {
		t.Fatalf("a changed estate in a work tree has revision %q", dirty)
	}
	git("commit", "-qam", "change")
	if r, _ := Revision(dir); r != git("rev-parse", "HEAD") || r == head {
		t.Fatalf("after the commit: %q", r)
	}
	// An estate Git ignores is identified by its files.
	writeTree(t, dir, map[string]string{".gitignore": "ignored/\n", "ignored/fleets/b.yaml": "x"})
	git("add", ".gitignore")
	git("commit", "-qm", "ignore")
	if r, _ := Revision(filepath.Join(dir, "ignored")); !strings.HasPrefix(r, "sha256:") {
		t.Fatalf("an ignored estate has revision %q", r)
	}
}

func TestFleetFor(t *testing.T) {
	e := &Estate{Fleets: []Fleet{
		{Name: "b", Priority: 5, Selector: map[string]string{"x": "1"}},
		{Name: "a", Priority: 5, Selector: map[string]string{"y": "1"}},
		{Name: "low", Priority: 1},
	}}
	if f, err := e.FleetFor(attributes.ViewOf(map[string]string{"x": "1"})); err != nil || f.Name != "b" {
		t.Fatalf("%v %v", f, err)
	}
	if f, err := e.FleetFor(attributes.ViewOf(map[string]string{})); err != nil || f.Name != "low" {
		t.Fatalf("%v %v", f, err)
	}
	f, err := e.FleetFor(attributes.ViewOf(map[string]string{"x": "1", "y": "1"}))
	var amb *AmbiguousFleetError
	if !errors.As(err, &amb) || f.Name != "a" || strings.Join(amb.Names, ",") != "a,b" {
		t.Fatalf("%v %v", f, err)
	}
}
