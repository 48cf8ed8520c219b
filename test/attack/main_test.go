//go:build linux

package attack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testkit"
)

// bins are the binaries under attack.
var bins struct{ myriarchd, updater string }

func TestMain(m *testing.M) {
	os.Exit(testkit.RunChecked(func() int { return run(m) }))
}

func run(m *testing.M) int {
	dir := os.Getenv("MYRIARCH_ATTACK_BIN_DIR")
	if dir == "" {
		tmp, err := os.MkdirTemp("", "myriarch-attack-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(tmp)
		if err := build(tmp); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		dir = tmp
	}
	bins.myriarchd = filepath.Join(dir, "myriarchd")
	bins.updater = filepath.Join(dir, "myriarch-updater")
	return m.Run()
}

// build builds the binaries without the race detector: the figures are the
// product's, and the attacks are on the server, not on this test process.
func build(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	for name, pkg := range map[string]string{"myriarchd": "./cmd/myriarchd", "myriarch-updater": "./cmd/myriarch-updater"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, name), pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
		}
	}
	return nil
}

// figure logs a measurement for BENCHMARKS.md.
func figure(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("figure: "+format, args...)
}
