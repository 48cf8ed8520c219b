package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/vars")

// TestVarsGolden runs `telecraft vars` in-process for every case directory
// under testdata/vars: args holds the command line, stdin (optional) the
// standard input; want.json is the expected stdout and want.exit the exit
// code. Run with -update to rewrite goldens, then review the diff.
func TestVarsGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "vars", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			abs, err := filepath.Abs(dir)
			if err != nil {
				t.Fatal(err)
			}
			rawArgs, err := os.ReadFile(filepath.Join(abs, "args"))
			if err != nil {
				t.Fatal(err)
			}
			stdin, err := os.ReadFile(filepath.Join(abs, "stdin"))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			t.Chdir(abs)
			var stdout, stderr bytes.Buffer
			code := runVars(strings.Fields(string(rawArgs)), bytes.NewReader(stdin), &stdout, &stderr)

			// Whatever happens, stdout is one JSON object with the documented shape.
			var out map[string]any
			if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, stdout.String())
			}
			checkShape(t, code, out)

			wantFile := filepath.Join(abs, "want.json")
			exitFile := filepath.Join(abs, "want.exit")
			if *update {
				if err := os.WriteFile(wantFile, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(exitFile, []byte(strconv.Itoa(code)+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatal(err)
			}
			wantExit, err := os.ReadFile(exitFile)
			if err != nil {
				t.Fatal(err)
			}
			if got := strconv.Itoa(code); got != strings.TrimSpace(string(wantExit)) {
				t.Errorf("exit %s, want %s (stderr: %s)", got, strings.TrimSpace(string(wantExit)), stderr.String())
			}
			if stdout.String() != string(want) {
				t.Errorf("stdout differs from %s:\n%s", wantFile, stdout.String())
			}
		})
	}
}

func checkShape(t *testing.T, code int, out map[string]any) {
	t.Helper()
	if code == 0 {
		_, v := out["value"]
		_, d := out["document"]
		if v == d || (d && out["dropped"] == nil) {
			t.Errorf("success output has neither value nor document+dropped: %v", out)
		}
		return
	}
	if code != 1 {
		t.Errorf("exit code %d, want 0 or 1", code)
	}
	e, ok := out["error"].(map[string]any)
	if !ok || len(out) != 1 {
		t.Fatalf("failure output is not {\"error\": …}: %v", out)
	}
	switch e["kind"] {
	case "parse", "missing", "render":
	default:
		t.Errorf("error kind %v", e["kind"])
	}
	if m, _ := e["message"].(string); m == "" {
		t.Error("error without message")
	}
}

func TestVarsHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runVars([]string{"-h"}, nil, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "--document") {
		t.Fatalf("help: exit %d, %q", code, stdout.String())
	}
}

// TestVarsBinary builds telecraft and runs the specification's case through the real
// binary, as a user would.
func TestVarsBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "telecraft")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "vars", "document-seed"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "vars", "--context", "ctx.json", "--dynamic", "dyn.json", "--document", "doc.yaml")
	cmd.Dir = dir
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("telecraft vars: %v", err)
	}
	want, err := os.ReadFile(filepath.Join(dir, "want.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("binary output differs from the golden:\n%s", got)
	}

	cmd = exec.Command(bin, "vars", "--context", "ctx.json", "--value", "-")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("${a..b}")
	got, err = cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !bytes.Contains(got, []byte(`"kind": "parse"`)) {
		t.Fatalf("parse error run: err %v, stdout %s", err, got)
	}
}
