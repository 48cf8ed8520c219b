package sitesetup

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/myriarch/myriarch/agent/service"
)

// scm is the Windows service manager.
type scm struct{}

func newServices() services { return scm{} }

// stopWithin bounds the wait for a service to stop, startWithin the wait
// for one to run.
const (
	stopWithin  = 60 * time.Second
	startWithin = 2 * time.Minute
)

// withService runs fn with the named service open; registered is false
// (and fn not run) when there is none.
func withService(name string, fn func(*mgr.Mgr, *mgr.Service) error) (registered bool, err error) {
	m, err := mgr.Connect()
	if err != nil {
		return false, fmt.Errorf("the service manager: %w", err)
	}
	defer m.Disconnect()
	s, err := m.OpenService(name)
	if errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("service %s: %w", name, err)
	}
	defer s.Close()
	return true, fn(m, s)
}

func commandLine(exe string, args []string) string {
	s := syscall.EscapeArg(exe)
	for _, a := range args {
		s += " " + syscall.EscapeArg(a)
	}
	return s
}

func (scm) Supervisor(exe string, args []string, dry bool) (bool, error) {
	want := commandLine(exe, args)
	changed := false
	registered, err := withService(SupervisorService, func(_ *mgr.Mgr, s *mgr.Service) error {
		c, err := s.Config()
		if err != nil {
			return fmt.Errorf("service %s: %w", SupervisorService, err)
		}
		if c.BinaryPathName == want {
			return nil
		}
		changed = true
		if dry {
			return nil
		}
		c.BinaryPathName = want
		if err := s.UpdateConfig(c); err != nil {
			return fmt.Errorf("service %s: setting its command: %w", SupervisorService, err)
		}
		return nil
	})
	if err != nil || registered {
		return changed, err
	}
	if dry {
		return true, nil
	}
	m, err := mgr.Connect()
	if err != nil {
		return false, fmt.Errorf("the service manager: %w", err)
	}
	defer m.Disconnect()
	s, err := m.CreateService(SupervisorService, exe, mgr.Config{
		DisplayName: "OpenTelemetry Collector (OpAMP Supervisor, myriarch)",
		StartType:   mgr.StartAutomatic,
	}, args...)
	if err != nil {
		return false, fmt.Errorf("registering service %s: %w", SupervisorService, err)
	}
	defer s.Close()
	// Restart 5 s after a failure; forget failures after a day (as the
	// updater's own service).
	restart := mgr.RecoveryAction{Type: mgr.ServiceRestart, Delay: 5 * time.Second}
	if err := s.SetRecoveryActions([]mgr.RecoveryAction{restart, restart, restart}, 86400); err != nil {
		return true, fmt.Errorf("service %s: setting its failure actions: %w", SupervisorService, err)
	}
	return true, nil
}

func (scm) Updater(exe, conf string, dry bool) (bool, string, error) {
	registered, err := withService(UpdaterService, func(*mgr.Mgr, *mgr.Service) error { return nil })
	if err != nil || registered {
		return false, "", err
	}
	if dry {
		return true, "", nil
	}
	m, err := service.NewFor(conf, exe)
	if err != nil {
		return false, "", err
	}
	if err := m.Install(); err != nil {
		return false, "", err
	}
	return true, m.Warning, nil
}

func (scm) Run(name string, restart, dry bool) (string, error) {
	did := ""
	registered, err := withService(name, func(_ *mgr.Mgr, s *mgr.Service) error {
		st, err := s.Query()
		if err != nil {
			return fmt.Errorf("service %s: %w", name, err)
		}
		running := st.State != svc.Stopped
		switch {
		case running && !restart:
			return nil
		case running:
			did = "restarted"
		default:
			did = "started"
		}
		if dry {
			did = "would " + map[string]string{"restarted": "restart", "started": "start"}[did]
			return nil
		}
		if running {
			if err := stop(name, s); err != nil {
				return err
			}
		}
		if err := s.Start(); err != nil {
			return fmt.Errorf("starting service %s: %w", name, err)
		}
		return waitRunning(name, s)
	})
	if err == nil && !registered && dry {
		return "would start", nil
	}
	if err == nil && !registered {
		return "", fmt.Errorf("service %s is not registered", name)
	}
	return did, err
}

func (scm) Stop(name string) error {
	_, err := withService(name, func(_ *mgr.Mgr, s *mgr.Service) error { return stop(name, s) })
	return err
}

func (scm) Remove(name string, dry bool) (bool, error) {
	return withService(name, func(_ *mgr.Mgr, s *mgr.Service) error {
		if dry {
			return nil
		}
		if err := stop(name, s); err != nil {
			return err
		}
		if err := s.Delete(); err != nil {
			return fmt.Errorf("removing service %s: %w", name, err)
		}
		return nil
	})
}

// stop stops s unless it is stopped, and waits (bounded) until it is.
// waitRunning waits until a service just started runs: one that stops
// as it starts, or is still starting after startWithin, is not said to
// have started.
func waitRunning(name string, s *mgr.Service) error {
	deadline := time.Now().Add(startWithin)
	for {
		st, err := s.Query()
		switch {
		case err != nil:
			return fmt.Errorf("service %s: %w", name, err)
		case st.State == svc.Running:
			return nil
		case st.State == svc.Stopped:
			code := fmt.Sprintf("exit code %d", st.Win32ExitCode)
			if st.Win32ExitCode == uint32(windows.ERROR_SERVICE_SPECIFIC_ERROR) {
				code = fmt.Sprintf("its own exit code %d", st.ServiceSpecificExitCode)
			} else if st.Win32ExitCode != 0 {
				code += ": " + windows.Errno(st.Win32ExitCode).Error()
			}
			return fmt.Errorf("service %s stopped as it started (%s); its reasons are in the Event Log", name, code)
		case time.Now().After(deadline):
			return fmt.Errorf("service %s is still starting after %s", name, startWithin)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func stop(name string, s *mgr.Service) error {
	st, err := s.Query()
	if err != nil {
		return fmt.Errorf("service %s: %w", name, err)
	}
	if st.State == svc.Stopped {
		return nil
	}
	if st.State != svc.StopPending {
		if _, err := s.Control(svc.Stop); err != nil {
			return fmt.Errorf("stopping service %s: %w", name, err)
		}
	}
	deadline := time.Now().Add(stopWithin)
	for time.Now().Before(deadline) {
		if st, err = s.Query(); err == nil && st.State == svc.Stopped {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("service %s did not stop within %s", name, stopWithin)
}
