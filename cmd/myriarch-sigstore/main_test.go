package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/internal/buildinfo"
	"github.com/myriarch/myriarch/internal/testkit"
)

// TestMain fails the package when a test leaves a goroutine or a process running.
func TestMain(m *testing.M) { os.Exit(testkit.RunChecked(m.Run)) }

// `version` and `--version` print the version, as the updater's do: a
// self-update checks the helper it carries with the updater's arguments.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		var out, errOut bytes.Buffer
		if code := run([]string{arg}, strings.NewReader(""), &out, &errOut); code != 0 || out.String() != "myriarch-sigstore "+buildinfo.Version+"\n" {
			t.Errorf("%s: exit %d, %q %q", arg, code, out.String(), errOut.String())
		}
	}
}
