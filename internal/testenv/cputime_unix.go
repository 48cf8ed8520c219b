//go:build unix

package testenv

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time (user+system) this process has used.
// Benchmarks report it beside wall time because the project's machine is
// shared: wall time moves with other people's load, CPU time much less.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
