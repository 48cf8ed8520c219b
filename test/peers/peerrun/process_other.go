//go:build !unix

package peerrun

import (
	"errors"
	"os"
	"syscall"
)

// Process groups and SIGINT are Unix notions; the peers run on Linux only.
func newGroupAttr() *syscall.SysProcAttr { return nil }

func interrupt(*os.Process) error { return errors.ErrUnsupported }

// killGroup can only kill the process itself here.
func killGroup(p *os.Process) { _ = p.Kill() }
