package binary

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/windows"
)

const exeSuffix = ".exe"

// testHealthWindow: under Wine on a loaded machine a new process can take
// more than a second to reach its main (100 ms when idle), all that time
// listed as running, so a collector that crashes 150 ms into its main
// needs a longer window to be told from one that runs.
const testHealthWindow = 3 * time.Second

// testSlow scales the harness's deadlines (how long a collector may take
// to start, or to be found running): process starts under Wine on a
// loaded machine take seconds.
const testSlow = 3

// testSerial: the crash points run one after the other: every Wine
// process goes through the one wineserver, and crash points side by side
// on a loaded machine made a recovered collector miss its deadline.
const testSerial = true

func alive(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	return windows.GetExitCodeProcess(h, &code) == nil && code == 259 // STILL_ACTIVE
}

// detach starts the fake supervisor in its own process group, as a
// service manager would.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// stopProcess asks the fake supervisor to stop through its stop file
// (Windows has no SIGINT for another process), and terminates it when it
// does not.
func stopProcess(pid int, stopfile string) error {
	if err := os.WriteFile(stopfile, nil, 0o600); err != nil {
		return err
	}
	defer os.Remove(stopfile)
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
			return fmt.Errorf("supervisor %d did not stop on its stop file", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// initialCurrent makes current versions\dir, as the site setup leaves it.
func initialCurrent(root, dir string) error { return switchCurrent(root, dir, func() {}) }
