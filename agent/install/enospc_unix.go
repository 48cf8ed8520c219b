//go:build !windows

package install

import "syscall"

const syscallENOSPC = syscall.ENOSPC
