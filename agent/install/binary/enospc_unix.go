//go:build !windows

package binary

import "syscall"

const syscallENOSPC = syscall.ENOSPC
