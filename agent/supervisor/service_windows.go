package supervisor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

func (s *Service) open() (*mgr.Mgr, *mgr.Service, error) {
	m, err := mgr.Connect()
	if err != nil {
		return nil, nil, fmt.Errorf("connect to service manager: %w", err)
	}
	svcH, err := m.OpenService(s.name)
	if err != nil {
		m.Disconnect()
		return nil, nil, fmt.Errorf("open service %q: %w", s.name, err)
	}
	return m, svcH, nil
}

// waitState polls the service until it reaches want or ctx ends: the SCM
// gives no blocking wait, and a bounded poll is what keeps a hung service
// from hanging the updater.
func waitState(ctx context.Context, h *mgr.Service, want svc.State) error {
	for {
		st, err := h.Query()
		if err != nil {
			return fmt.Errorf("query service: %w", err)
		}
		if st.State == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("service state is %d, waiting for %d: %w", st.State, want, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (s *Service) start(ctx context.Context) error {
	m, h, err := s.open()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	defer h.Close()
	if err := h.Start(); err != nil && !errors.Is(err, windows.ERROR_SERVICE_ALREADY_RUNNING) {
		return fmt.Errorf("start service %q: %w", s.name, err)
	}
	return waitState(ctx, h, svc.Running)
}

func (s *Service) stop(ctx context.Context) error {
	m, h, err := s.open()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	defer h.Close()
	if _, err := h.Control(svc.Stop); err != nil && !errors.Is(err, windows.ERROR_SERVICE_NOT_ACTIVE) {
		return fmt.Errorf("stop service %q: %w", s.name, err)
	}
	return waitState(ctx, h, svc.Stopped)
}

func (s *Service) restart(ctx context.Context) error {
	s.log.Info("restarting supervisor service", "service", s.name)
	if err := s.stop(ctx); err != nil {
		return err
	}
	return s.start(ctx)
}

func (s *Service) pid(ctx context.Context) int {
	m, h, err := s.open()
	if err != nil {
		return 0
	}
	defer m.Disconnect()
	defer h.Close()
	st, err := h.Query()
	if err != nil {
		return 0
	}
	return int(st.ProcessId)
}
