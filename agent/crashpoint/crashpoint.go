// Package crashpoint is the crash-test hook of the install engines: a test
// names a step in an environment variable, and the process kills itself
// (SIGKILL, so no deferred function or cleanup runs) or freezes when it
// reaches that step. Recovery is then tested from every step. Without the
// variable a crash point only notifies an optional observer.
package crashpoint

import (
	"fmt"
	"os"
)

// Environment variables of the hook.
const (
	AtEnv   = "MYRIARCH_TEST_CRASH_AT"
	ModeEnv = "MYRIARCH_TEST_CRASH_MODE" // "kill" (default) or "pause"
)

// Reach marks that the process reached point: onStep (when set) observes
// it, and when at names it the process announces
// "MYRIARCH_CRASHPOINT <point>" on stderr and dies, or blocks forever when
// ModeEnv is "pause" (the test then kills it).
func Reach(point, at string, onStep func(string)) {
	if onStep != nil {
		onStep(point)
	}
	if at == "" || at != point {
		return
	}
	fmt.Fprintf(os.Stderr, "MYRIARCH_CRASHPOINT %s\n", point)
	if os.Getenv(ModeEnv) == "pause" {
		select {}
	}
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill()
	}
	select {}
}
