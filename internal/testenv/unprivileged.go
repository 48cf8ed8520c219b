package testenv

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// unprivilegedEnv marks a test process that Unprivileged started.
const unprivilegedEnv = "MYRIARCH_TEST_UNPRIVILEGED"

// Unprivileged makes file permissions apply to the calling test even when
// the tests run as root. As an ordinary user it returns false and the test
// goes on. As root it runs the test again in a child process that keeps
// its user but lacks the capabilities to bypass permissions
// (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), fails t if the child fails, and
// returns true: the caller returns at once. Files the test creates are
// still the caller's own, so a mode of 0 denies it access.
func Unprivileged(t *testing.T) (ranInChild bool) {
	t.Helper()
	if os.Geteuid() != 0 || os.Getenv(unprivilegedEnv) == "1" {
		return false
	}
	setpriv := Tool(t, "setpriv", "util-linux")
	run := make([]string, 0, 4)
	for _, part := range strings.Split(t.Name(), "/") {
		run = append(run, "^"+regexp.QuoteMeta(part)+"$")
	}
	drop := "-dac_override,-dac_read_search"
	cmd := exec.Command(setpriv, "--inh-caps="+drop, "--bounding-set="+drop, "--",
		os.Args[0], "-test.run="+strings.Join(run, "/"), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), unprivilegedEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s without the capabilities to bypass file permissions: %v\n%s", t.Name(), err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s did not run in the child process:\n%s", t.Name(), out)
	}
	return true
}
