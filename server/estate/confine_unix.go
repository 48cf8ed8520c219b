//go:build unix

package estate

import (
	"os"
	"syscall"
)

// openFlags opens without blocking on a FIFO, which is then refused as not
// a regular file.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
