package service

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// phase is what a running service tells its service manager.
type phase int

const (
	phaseStarting phase = iota // fn is being started
	phaseRunning               // fn runs; stop and shutdown requests are accepted
	phaseStopping              // a stop was requested; fn is ending
)

// request is a service manager's request reduced to what serve acts on.
type request int

const (
	requestIgnore request = iota // answered by the adapter (interrogate) or not for serve
	requestStop                  // stop, or system shutdown
)

// stopTimeout bounds how long serve waits for fn after a stop request.
const stopTimeout = 2 * time.Minute

// errStopTimeout is serve's result when fn outlives stopTimeout.
var errStopTimeout = fmt.Errorf("updater did not stop within %s", stopTimeout)

// serve runs fn as a service: it reports phaseStarting then phaseRunning,
// and returns fn's result as soon as fn returns, whether on its own (a
// self-update's restart request, a failure) or after a stop request, which
// cancels fn's context and is reported as phaseStopping. classify turns the
// manager's requests into what serve acts on. If fn does not return within
// timeout of a stop request, serve gives up with errStopTimeout (the process
// is about to exit; fn goes with it).
//
// serve is the whole service-manager protocol except for the wire: the
// Windows adapter feeds it svc.ChangeRequests and turns the phases into
// svc.Status and the result into the service's exit code.
func serve[R any](ctx context.Context, fn func(context.Context) error, requests <-chan R, classify func(R) request, report func(phase), timeout time.Duration) error {
	report(phaseStarting)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1) // buffered: fn's goroutine never blocks, even after a timeout
	go func() { done <- fn(ctx) }()
	report(phaseRunning)

	var deadline <-chan time.Time
	for {
		select {
		case err := <-done:
			return err
		case r := <-requests:
			if deadline != nil || classify(r) != requestStop {
				continue
			}
			report(phaseStopping)
			cancel()
			t := time.NewTimer(timeout)
			defer t.Stop()
			deadline = t.C
		case <-deadline:
			return errStopTimeout
		}
	}
}

// exitCoder is an error that chooses the process's exit status.
type exitCoder interface{ ExitCode() int }

// ExitCode is the exit status for a run that ended with err: 0 for nil,
// the error's own ExitCode() when it has one (anywhere in its chain), else
// 1. The Windows service reports the same value as its service-specific
// exit code, so the service manager's failure actions see what a
// systemd-run process would exit with.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ec exitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return 1
}
