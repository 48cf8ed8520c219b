//go:build !unix

package testenv

import "time"

// ProcessCPU is unavailable here; benchmarks then report 0.
func ProcessCPU() time.Duration { return 0 }
