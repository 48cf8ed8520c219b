package binary

import "syscall"

// ERROR_DISK_FULL
const syscallENOSPC = syscall.Errno(112)
