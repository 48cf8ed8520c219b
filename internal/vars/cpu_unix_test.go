//go:build unix

package vars

import (
	"syscall"
	"time"
)

// processCPU is the process's user+system CPU time: on a shared machine it
// moves far less with other load than wall time does.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
