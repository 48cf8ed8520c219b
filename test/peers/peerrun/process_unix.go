//go:build unix

package peerrun

import (
	"os"
	"syscall"
)

func interrupt(p *os.Process) error { return p.Signal(os.Interrupt) }

// killGroup kills every process left in the group; an empty group is fine.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
