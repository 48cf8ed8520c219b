//go:build unix && !linux

package peerrun

import "syscall"

// newGroupAttr starts a peer in its own process group.
func newGroupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
