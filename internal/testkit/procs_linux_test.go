package testkit

import (
	"os/exec"
	"strings"
	"testing"
)

// An orphan started through a shell that exits at once is adopted, found,
// killed and described; nothing is left afterwards.
func TestKillSurvivorsFindsAdoptedOrphans(t *testing.T) {
	if err := adoptOrphans(); err != nil {
		t.Fatal(err)
	}
	// The shell exits at once; its background sleep is orphaned.
	if err := exec.Command("sh", "-c", "sleep 300 & exit 0").Run(); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, "the orphaned sleep to be adopted", func() bool {
		for _, c := range children() {
			if strings.HasPrefix(c.cmdline, "sleep 300") {
				return true
			}
		}
		return false
	})
	left := killSurvivors()
	if len(left) != 1 || !strings.Contains(left[0], "sleep 300") {
		t.Fatalf("survivors = %q, want the sleep", left)
	}
	if again := killSurvivors(); len(again) != 0 {
		t.Fatalf("after the kill, survivors = %q", again)
	}
}
