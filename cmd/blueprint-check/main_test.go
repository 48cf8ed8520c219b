package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var testdata = filepath.Join("..", "..", "internal", "blueprint", "testdata")

func check(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func keys(m map[string]any) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	slices.Sort(k)
	return k
}

// decodeReport checks the exact --json shape and returns it.
func decodeReport(t *testing.T, out string) map[string]any {
	t.Helper()
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out)
	}
	if got := keys(rep); !slices.Equal(got, []string{"errors", "findings", "loaded"}) {
		t.Fatalf("top-level keys = %v", got)
	}
	for _, k := range []string{"errors", "findings"} {
		if _, ok := rep[k].([]any); !ok {
			t.Fatalf("%s = %#v, want a list (never null)", k, rep[k])
		}
	}
	loaded, ok := rep["loaded"].(map[string]any)
	if !ok {
		t.Fatalf("loaded = %#v", rep["loaded"])
	}
	if got := keys(loaded); !slices.Equal(got, []string{"blueprints", "components", "requirements"}) {
		t.Fatalf("loaded keys = %v", got)
	}
	for k, v := range loaded {
		if _, ok := v.([]any); !ok {
			t.Fatalf("loaded.%s = %#v, want a list (never null)", k, v)
		}
	}
	for _, e := range rep["errors"].([]any) {
		if got := keys(e.(map[string]any)); !slices.Equal(got, []string{"file", "line", "message"}) {
			t.Fatalf("error keys = %v", got)
		}
	}
	for _, f := range rep["findings"].([]any) {
		if got := keys(f.(map[string]any)); !slices.Equal(got, []string{"blueprint", "kind", "lane", "message", "owner"}) {
			t.Fatalf("finding keys = %v", got)
		}
	}
	return rep
}

func TestJSONClean(t *testing.T) {
	root := filepath.Join(testdata, "render", "seed-gateway", "root")
	code, out, _ := check("--root", root, "--json")
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	rep := decodeReport(t, out)
	loaded := rep["loaded"].(map[string]any)
	want := map[string][]any{
		"blueprints":   {"data-flow/gateway-standard"},
		"components":   {"data-flow/gateway-exporter", "infosec/pii-redaction"},
		"requirements": {"data-flow/logs-delivered"},
	}
	for k, w := range want {
		if !slices.Equal(loaded[k].([]any), w) {
			t.Errorf("loaded.%s = %v, want %v", k, loaded[k], w)
		}
	}
	if n := len(rep["errors"].([]any)) + len(rep["findings"].([]any)); n != 0 {
		t.Errorf("want no errors or findings, got %v", rep)
	}
}

// An estate with nothing of a kind prints empty lists, never null.
func TestJSONEmptyLists(t *testing.T) {
	root := t.TempDir()
	bp := filepath.Join(root, "teams", "a", "blueprints", "bp.yaml")
	if err := os.MkdirAll(filepath.Dir(bp), 0o755); err != nil {
		t.Fatal(err)
	}
	err := os.WriteFile(bp, []byte(`name: bp
version: 1
owner: team-a
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
  traces:
    - component: in
    - component: out
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := check("--root", root, "--json")
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, out)
	}
	rep := decodeReport(t, out) // fails on any null list
	loaded := rep["loaded"].(map[string]any)
	if len(loaded["blueprints"].([]any)) != 1 || len(loaded["components"].([]any)) != 0 || len(loaded["requirements"].([]any)) != 0 {
		t.Errorf("loaded = %v, want one Blueprint and empty lists", loaded)
	}
	if strings.Contains(out, "null") {
		t.Errorf("--json prints null:\n%s", out)
	}
}

func TestFindingsExitCodes(t *testing.T) {
	root := filepath.Join(testdata, "findings", "ordering-batch-too-early", "root")
	code, out, _ := check("--root", root, "--json")
	if code != 0 {
		t.Fatalf("findings alone: exit %d, want 0", code)
	}
	rep := decodeReport(t, out)
	fs := rep["findings"].([]any)
	if len(fs) != 3 {
		t.Fatalf("findings = %v, want 3", fs)
	}
	f := fs[0].(map[string]any)
	if f["kind"] != "ordering" || f["blueprint"] != "a/bp" || f["lane"] != "traces" || f["owner"] != "team-a" || f["message"] == "" {
		t.Errorf("finding = %v", f)
	}
	if code, _, _ := check("--root", root, "--strict"); code != 2 {
		t.Errorf("--strict with findings: exit %d, want 2", code)
	}
	if code, _, _ := check("--strict", "--root", filepath.Join(testdata, "findings", "clean", "root")); code != 0 {
		t.Errorf("--strict without findings: exit %d, want 0", code)
	}
	code, out, _ = check("--root", root)
	if code != 0 || !strings.Contains(out, "ordering a/bp [traces] owner team-a:") || !strings.Contains(out, "a/bp\n") {
		t.Errorf("text: exit %d\n%s", code, out)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := filepath.Join(testdata, "load", "every-error-reported")
	root := filepath.Join(dir, "root")
	code, out, _ := check("--root", root, "--json", "--strict")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	rep := decodeReport(t, out)
	errs := rep["errors"].([]any)
	if len(errs) != 6 {
		t.Fatalf("errors = %v, want all 6", errs)
	}
	first := errs[0].(map[string]any)
	if first["file"] != filepath.Join(root, "teams", "a", "components", "exp.yaml") || first["line"] != float64(1) {
		t.Errorf("first error = %v", first)
	}
	for k, v := range rep["loaded"].(map[string]any) {
		if len(v.([]any)) != 0 {
			t.Errorf("loaded.%s = %v, want empty on load errors", k, v)
		}
	}
	if len(rep["findings"].([]any)) != 0 {
		t.Errorf("findings = %v, want empty on load errors", rep["findings"])
	}

	code, out, _ = check("--root", root)
	if code != 1 || !strings.Contains(out, filepath.Join(root, "teams", "b", "blueprints", "other.yaml")+":2: ") {
		t.Errorf("text: exit %d\n%s", code, out)
	}
}

func TestRepeatableRootAndDuplicates(t *testing.T) {
	dir := filepath.Join(testdata, "load", "duplicate-id-across-roots")
	code, out, _ := check("--root", filepath.Join(dir, "root"), "--root", filepath.Join(dir, "root2"), "--json")
	if code != 1 || !strings.Contains(out, "duplicate Component id") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"--json"}, {"--root", "x", "extra"}, {"--bogus"}} {
		if code, _, errOut := check(args...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 with usage", args, code, errOut)
		}
	}
}
