//go:build !unix

package vars

import "time"

func processCPU() time.Duration { return 0 }
