package site

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Bins are the project's binaries under test.
type Bins struct {
	Myriarchd string
	Updater   string
	Telecraft string
	// Sigstore is the updater's Sigstore verifier, beside it.
	Sigstore string
}

// BuildBins builds myriarchd, myriarch-updater (with myriarch-sigstore beside it) and
// telecraft into dir from the module
// that contains the working directory.
func BuildBins(ctx context.Context, dir, version string) (Bins, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return Bins{}, fmt.Errorf("go env GOMOD: %w", err)
	}
	modRoot := filepath.Dir(strings.TrimSpace(string(out)))
	b := Bins{Myriarchd: filepath.Join(dir, "myriarchd"), Updater: filepath.Join(dir, "myriarch-updater"), Telecraft: filepath.Join(dir, "telecraft"),
		Sigstore: filepath.Join(dir, "myriarch-sigstore")}
	for pkg, dst := range map[string]string{"./cmd/myriarchd": b.Myriarchd, "./cmd/myriarch-updater": b.Updater, "./cmd/telecraft": b.Telecraft,
		"./cmd/myriarch-sigstore": b.Sigstore} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", dst,
			"-ldflags", "-X github.com/myriarch/myriarch/internal/buildinfo.Version="+version, pkg)
		cmd.Dir = modRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return Bins{}, fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
		}
	}
	return b, nil
}
