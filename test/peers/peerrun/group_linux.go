package peerrun

import "syscall"

// newGroupAttr starts a peer in its own process group, killed by the kernel
// when the thread that started it ends: a test process that dies (a timeout,
// a crash) takes its peers with it.
func newGroupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
