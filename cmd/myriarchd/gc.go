package main

import (
	"runtime/debug"
	"strconv"
)

// myriarchd's heap is mostly the estate it holds (each agent's record,
// pairing, offer and configuration state): large, long-lived, with little
// churn beside it. Go's collector lets the heap grow to twice what is live
// before it collects, and the runtime keeps about a tenth more than that
// mapped, so such a server's resident memory is some 2.2 times its live
// heap. Unless the operator sets GOGC, serve collects at 75 % growth
// instead: about an eighth less memory for a few percent more CPU (see
// BENCHMARKS.md for both, measured).
const defaultGCPercent = 75

// gcPercent is the collector's target serve runs with: GOGC when set (the
// runtime has read it already), else defaultGCPercent, which the caller
// applies with debug.SetGCPercent.
func gcPercent(getenv func(string) (string, bool)) (percent string, byDefault bool) {
	if v, ok := getenv("GOGC"); ok {
		return v, false
	}
	return strconv.Itoa(defaultGCPercent), true
}

// applyGCPercent sets the default target when GOGC is unset and reports
// the one in force.
func applyGCPercent(getenv func(string) (string, bool)) (percent string, byDefault bool) {
	percent, byDefault = gcPercent(getenv)
	if byDefault {
		debug.SetGCPercent(defaultGCPercent)
	}
	return percent, byDefault
}
