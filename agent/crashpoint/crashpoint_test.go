package crashpoint

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestObserverOnly(t *testing.T) {
	var seen []string
	for _, p := range []string{"a", "b", "c"} {
		Reach(p, "", func(s string) { seen = append(seen, s) })
		Reach(p, "other", func(s string) { seen = append(seen, s) })
	}
	Reach("d", "", nil) // no observer, no crash point: nothing happens
	if want := []string{"a", "a", "b", "b", "c", "c"}; !slices.Equal(seen, want) {
		t.Errorf("observed %v, want %v", seen, want)
	}
}

// TestKill re-runs this test binary as a child that reaches the named point.
func TestKill(t *testing.T) {
	if os.Getenv("CRASHPOINT_TEST_CHILD") == "1" {
		Reach("before", os.Getenv(AtEnv), nil)
		Reach("target", os.Getenv(AtEnv), nil)
		os.Exit(0) // not reached when the hook works
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill$")
	cmd.Env = append(os.Environ(), "CRASHPOINT_TEST_CHILD=1", AtEnv+"=target")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		t.Fatal("child exited cleanly, want killed at the crash point")
	}
	if got := stderr.String(); got != "MYRIARCH_CRASHPOINT target\n" {
		t.Errorf("stderr %q", got)
	}
}
