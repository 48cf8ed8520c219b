//go:build unix

package supervisor

import (
	"errors"
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in its own process group (pgid = pid) so
// signals reach the supervisor and the collector it starts, and a terminal
// Ctrl-C aimed at the updater does not reach them directly.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func interruptGroup(cmd *exec.Cmd) error {
	return signalGroup(cmd, syscall.SIGINT)
}

func killGroup(cmd *exec.Cmd) error {
	return signalGroup(cmd, syscall.SIGKILL)
}

func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	err := syscall.Kill(-cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil // the group is already gone
	}
	return err
}
