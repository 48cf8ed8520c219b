package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"

	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// Run runs fn until ctx ends, the SCM stops the service, or (interactive)
// Ctrl-C arrives, and returns fn's result; the caller exits with ExitCode
// of it.
//
// As a service, fn returning on its own (a self-update's restart request,
// a failure) ends the service at once: it reports SERVICE_STOPPED with
// ExitCode(err) as its service-specific exit code, Run returns, and the
// SCM's failure actions (restart after 5 s, set by Install) start it again.
// The SCM applies failure actions to a service that stopped with a non-zero
// exit code only when its "non-crash failures" flag is set; Run sets it.
func Run(ctx context.Context, log *slog.Logger, byManager bool, fn func(context.Context) error) error {
	isService, err := runsAsService(byManager)
	if err != nil {
		return fmt.Errorf("service: %w", err)
	}
	if !isService {
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
		return fn(ctx)
	}
	if err := restartOnNonZeroExit(); err != nil {
		log.Warn("the service manager may not restart the updater after it exits non-zero (self-update, failure)", "err", err)
	}
	h := &handler{ctx: ctx, fn: fn, result: make(chan error, 1)}
	if err := svc.Run(Name, h); err != nil {
		return fmt.Errorf("service: %w", err)
	}
	select {
	case err := <-h.result:
		return err
	default:
		return errors.New("service: the service manager ended the service before it started")
	}
}

// handler adapts serve to the SCM protocol of golang.org/x/sys/windows/svc.
type handler struct {
	ctx    context.Context
	fn     func(context.Context) error
	result chan error
}

func (h *handler) Execute(_ []string, requests <-chan svc.ChangeRequest, changes chan<- svc.Status) (bool, uint32) {
	classify := func(c svc.ChangeRequest) request {
		switch c.Cmd {
		case svc.Stop, svc.Shutdown:
			return requestStop
		case svc.Interrogate:
			changes <- c.CurrentStatus
		}
		return requestIgnore
	}
	report := func(p phase) { changes <- scmStatus(p) }
	err := serve(h.ctx, h.fn, requests, classify, report, stopTimeout)
	h.result <- err
	code := ExitCode(err)
	return code != 0, uint32(code)
}

func scmStatus(p phase) svc.Status {
	switch p {
	case phaseRunning:
		return svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	case phaseStopping:
		return svc.Status{State: svc.StopPending, WaitHint: uint32(stopTimeout.Milliseconds())}
	}
	return svc.Status{State: svc.StartPending}
}

// restartOnNonZeroExit sets the service's failure-actions flag so that a
// stop with a non-zero exit code counts as a failure (the service runs as
// LocalSystem, which may change its own configuration).
func restartOnNonZeroExit() error {
	m, err := mgr.Connect()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	s, err := m.OpenService(Name)
	if err != nil {
		return err
	}
	defer s.Close()
	if on, err := s.RecoveryActionsOnNonCrashFailures(); err == nil && on {
		return nil
	}
	return s.SetRecoveryActionsOnNonCrashFailures(true)
}
