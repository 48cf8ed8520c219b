// Package supervisor controls the upstream OpAMP Supervisor that runs the
// collector: either as an OS service the updater restarts by name, or as a
// child process the updater starts and stops itself.
//
// The supervisor only stops cleanly on SIGINT (SIGTERM/SIGKILL orphan the
// collector, which keeps its ports), so every implementation stops it with
// an interrupt first and escalates only after a bounded wait.
package supervisor

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/myriarch/myriarch/agent/config"
)

// Controller starts, stops and restarts the supervisor.
//
// Every method honours ctx: when ctx has no deadline the implementation
// applies its own bound (DefaultTimeout) so no call can hang forever. Start
// on a running supervisor and Stop on a stopped one are no-ops. Methods are
// safe for concurrent use.
type Controller interface {
	// Start starts the supervisor and returns once it has been launched.
	Start(ctx context.Context) error
	// Stop interrupts the supervisor, waits (bounded) for it to exit and
	// forcibly ends it when it does not.
	Stop(ctx context.Context) error
	// Restart stops and starts the supervisor.
	Restart(ctx context.Context) error
	// PID returns the supervisor's process ID, or 0 when it is not running
	// or the ID cannot be determined.
	PID() int
}

// DefaultTimeout bounds one Start/Stop/Restart when ctx has no deadline.
const DefaultTimeout = 90 * time.Second

// New returns the Controller that cfg.Control selects.
func New(cfg config.SupervisorConfig, log *slog.Logger) (Controller, error) {
	switch cfg.Control {
	case config.ControlProcess:
		return NewProcess(cfg.Command, log), nil
	case config.ControlService:
		return NewService(cfg.Service, log), nil
	}
	return nil, fmt.Errorf("supervisor: unknown control %q", cfg.Control)
}

func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultTimeout)
}
