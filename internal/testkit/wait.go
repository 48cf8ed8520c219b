package testkit

import (
	"testing"
	"time"
)

// DefaultWait is how long WaitFor polls before it fails the test.
const DefaultWait = 20 * time.Second

// pollEvery is the pause between two evaluations of a condition.
const pollEvery = 10 * time.Millisecond

// WaitFor polls cond until it holds, failing the test with what after
// DefaultWait. It is WaitWithin with the default deadline.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	WaitWithin(t, DefaultWait, what, cond)
}

// WaitWithin polls cond until it holds, failing the test with what and the
// deadline when within passes first. cond runs on the test's goroutine.
func WaitWithin(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(within, cond) {
		t.Fatalf("timed out after %s waiting for %s", within, what)
	}
}

// Poll evaluates cond until it holds or within passes, and reports whether
// it held. It is for callers that decide themselves what a timeout means.
func Poll(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
	return true
}
