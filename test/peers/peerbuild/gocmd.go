package peerbuild

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// goTool runs the Go toolchain (and ocb, which calls it) with an environment
// that does not leak the caller's module settings into the peer modules.
type goTool struct {
	goBin string
	// goos and goarch are what builds are for; empty means this system
	// (and tools the build runs, such as ocb, are always built for it).
	goos, goarch string
	// log receives the full output of every command; failures also quote
	// its tail in the error.
	log io.Writer
}

func findGo() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("find the go command: not on PATH and GOROOT unset")
}

// env is the caller's environment with the settings that matter pinned:
// no workspace, no inherited GOFLAGS, static binaries for the target
// system, and the chosen go first on PATH (ocb looks it up there).
func (g goTool) env(extra ...string) []string {
	goos, goarch := runtime.GOOS, runtime.GOARCH
	if g.goos != "" {
		goos, goarch = g.goos, g.goarch
	}
	drop := map[string]bool{"GOWORK": true, "GOFLAGS": true, "CGO_ENABLED": true, "GOOS": true, "GOARCH": true, "GOBIN": true, "PATH": true}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			env = append(env, kv)
		}
	}
	env = append(env,
		"GOWORK=off",
		"GOFLAGS=-buildvcs=false",
		"CGO_ENABLED=0",
		"GOOS="+goos,
		"GOARCH="+goarch,
		"PATH="+filepath.Dir(g.goBin)+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
	return append(env, extra...)
}

// run executes name with args in dir. Its output goes to g.log; on failure
// the error carries the last lines of it.
func (g goTool) run(ctx context.Context, dir string, extraEnv []string, name string, args ...string) error {
	var tail tailBuffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = g.env(extraEnv...)
	out := io.MultiWriter(g.log, &tail)
	cmd.Stdout, cmd.Stderr = out, out
	fmt.Fprintf(g.log, "\n$ (cd %s && %s %s)\n", dir, name, strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s in %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), dir, err, tail.String())
	}
	return nil
}

// host is g building for this system (for tools the build runs).
func (g goTool) host() goTool {
	g.goos, g.goarch = "", ""
	return g
}

// output runs the go command and returns its trimmed standard output.
func (g goTool) output(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, g.goBin, args...)
	cmd.Env = g.env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// tailBuffer keeps the last few KiB written to it.
type tailBuffer struct{ b []byte }

const tailMax = 4 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > tailMax {
		t.b = append([]byte(nil), t.b[len(t.b)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
