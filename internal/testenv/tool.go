package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// SetupCommand installs every tool the tests need and starts their services.
const SetupCommand = "bash test/setup.sh"

// Tool returns the path of the command name, failing the test when it is not
// on PATH. pkg is the Debian package that provides it.
func Tool(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: %s (or %s)", name, installHint(pkg), SetupCommand)
	}
	return p
}

// File returns the content of a file that the Debian package pkg installs,
// failing the test when it is missing.
func File(t testing.TB, path, pkg string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: %s (or %s)", err, installHint(pkg), SetupCommand)
	}
	return b
}

// Root fails the test unless it runs as root; why says what needs it.
func Root(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("%s needs root: run the tests as root (sudo make test)", why)
	}
}

func installHint(pkg string) string {
	return "apt-get install -y " + pkg
}
