package supervisor

import (
	"context"
	"log/slog"
)

// Service controls the supervisor as an OS service (systemd unit on Linux,
// SCM service on Windows); other systems return errors.ErrUnsupported.
type Service struct {
	name string
	log  *slog.Logger
}

var _ Controller = (*Service)(nil)

// NewService returns a controller for the OS service called name.
func NewService(name string, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{name: name, log: log}
}

// Name is the OS service name.
func (s *Service) Name() string { return s.name }

// Start starts the service.
func (s *Service) Start(ctx context.Context) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	return s.start(ctx)
}

// Stop stops the service; the service manager sends the stop signal the unit
// configures (KillSignal=SIGINT for the supervisor).
func (s *Service) Stop(ctx context.Context) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	return s.stop(ctx)
}

// Restart restarts the service.
func (s *Service) Restart(ctx context.Context) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	return s.restart(ctx)
}

// PID returns the service's main process ID, or 0.
func (s *Service) PID() int {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancel()
	return s.pid(ctx)
}
