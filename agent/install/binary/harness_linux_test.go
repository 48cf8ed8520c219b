package binary

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const exeSuffix = ""

// testHealthWindow: a new process reaches its main within a few hundred
// milliseconds even on a loaded machine.
const testHealthWindow = 800 * time.Millisecond

// testSlow scales the harness's deadlines (how long a collector may take
// to start, or to be found running).
const testSlow = 1

// testSerial: the crash points run side by side.
const testSerial = false

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i > 0 && len(s) > i+2 {
		return s[i+2] != 'Z'
	}
	return true
}

// detach starts the fake supervisor in its own session, as a service
// manager would.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

// stopProcess stops the fake supervisor with SIGINT (its session killed
// when it does not stop).
func stopProcess(pid int, _ string) error {
	syscall.Kill(pid, syscall.SIGINT)
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(-pid, syscall.SIGKILL)
			return fmt.Errorf("supervisor %d did not stop on SIGINT", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// initialCurrent points current at versions/dir, as the site installer
// leaves it.
func initialCurrent(root, dir string) error {
	return os.Symlink(filepath.Join("versions", dir), filepath.Join(root, "current"))
}
