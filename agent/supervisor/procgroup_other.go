//go:build !unix && !windows

package supervisor

import (
	"errors"
	"os/exec"
)

func setProcessGroup(cmd *exec.Cmd) {}

func interruptGroup(cmd *exec.Cmd) error { return errors.ErrUnsupported }

func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }
