package testenv

import (
	"os/exec"
	"testing"
)

// Chromium returns the path of a Chromium browser for headless tests,
// failing the test when none is installed (Debian package chromium).
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return Tool(t, "chromium", "chromium")
}
