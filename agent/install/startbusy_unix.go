//go:build !windows

package install

import (
	"errors"
	"syscall"
)

// startBusy says whether starting a file just written failed only for a
// moment: a fork elsewhere in this process (any exec) may have inherited
// the write descriptor just before it was closed, until that child execs
// (golang/go#22315).
func startBusy(err error) bool { return errors.Is(err, syscall.ETXTBSY) }
