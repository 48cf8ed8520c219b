package main

import (
	"fmt"
	"runtime/debug"
	"strconv"
)

// myriarchd's heap is mostly the estate it holds (each agent's record,
// pairing, offer and configuration state): large, long-lived, with little
// churn beside it. Go's collector lets the heap grow to twice what is live
// before it collects, and the runtime keeps about a tenth more than that
// mapped, so such a server's resident memory is some 2.2 times its live
// heap. Unless the operator sets GOGC, serve collects at 75 % growth
// instead: about a tenth less memory for more collection work (see
// BENCHMARKS.md for both, measured).
const defaultGCPercent = 75

// gcPercent is the collector's target serve runs with and whether it is
// myriarchd's default: GOGC when set (the runtime has read it already),
// else defaultGCPercent, which the caller applies with debug.SetGCPercent.
// A GOGC the runtime cannot read leaves Go's 100, and is an error to report.
func gcPercent(getenv func(string) (string, bool)) (percent string, byDefault bool, err error) {
	if v, ok := getenv("GOGC"); ok {
		if _, perr := strconv.Atoi(v); perr != nil && v != "off" {
			return "100", false, fmt.Errorf("GOGC=%q is neither a percentage nor off: the Go runtime collects at 100 %%", v)
		}
		return v, false, nil
	}
	return strconv.Itoa(defaultGCPercent), true, nil
}

// applyGCPercent sets the default target when GOGC is unset and reports
// the one in force.
func applyGCPercent(getenv func(string) (string, bool)) (percent string, byDefault bool, err error) {
	percent, byDefault, err = gcPercent(getenv)
	if byDefault {
		debug.SetGCPercent(defaultGCPercent)
	}
	return percent, byDefault, err
}
