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

// A grandchild whose parent still runs is found and killed with it.
func TestKillDescendantsFindsGrandchildren(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 301 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	WaitFor(t, "the grandchild sleep", func() bool {
		for _, p := range processes() {
			if p.ppid == cmd.Process.Pid && strings.HasPrefix(p.cmdline, "sleep 301") {
				return true
			}
		}
		return false
	})
	killed := killDescendants()
	if len(killed) != 2 {
		t.Fatalf("killed %q, want the shell and its sleep", killed)
	}
	<-done
	WaitFor(t, "the sleep to be gone", func() bool {
		for _, p := range processes() {
			if strings.HasPrefix(p.cmdline, "sleep 301") && p.state != "Z" {
				return false
			}
		}
		return true
	})
	killSurvivors() // reap the adopted sleep
}
