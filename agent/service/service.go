// Package service installs, controls and runs myriarch-updater as an OS
// service through github.com/kardianos/service: a systemd unit on Linux and
// an SCM service on Windows, both set to restart the updater when it fails.
package service

import (
	"errors"
	"fmt"

	kservice "github.com/kardianos/service"
)

// Name is the OS service name.
const Name = "myriarch-updater"

// Config is the kardianos service definition for an updater that runs
// `<executable> run --config <configPath>`. An empty executable means the
// running binary.
func Config(configPath, executable string) *kservice.Config {
	return &kservice.Config{
		Name:        Name,
		DisplayName: "Myriarch Updater",
		Description: "Myriarch updater: keeps the OpenTelemetry Collector up to date and paired with the myriarch server",
		Executable:  executable,
		Arguments:   []string{"run", "--config", configPath},
		Dependencies: []string{
			"After=network-online.target",
			"Wants=network-online.target",
		},
		Option: kservice.KeyValue{
			// systemd (our own unit: see unit.go)
			"SystemdScript": systemdUnit,
			// Windows SCM: restart 5 s after a failure; forget failures after a day.
			"OnFailure":              "restart",
			"OnFailureDelayDuration": "5s",
			"OnFailureResetPeriod":   86400,
			"StartType":              "automatic",
			"DelayedAutoStart":       true,
		},
	}
}

// Manager installs and controls the service.
type Manager struct {
	svc kservice.Service
}

// idle is the kardianos program for control commands, which never run it.
type idle struct{}

func (idle) Start(kservice.Service) error { return nil }
func (idle) Stop(kservice.Service) error  { return nil }

// New returns a Manager for the service that runs the updater with configPath.
func New(configPath string) (*Manager, error) {
	s, err := kservice.New(idle{}, Config(configPath, ""))
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	return &Manager{svc: s}, nil
}

// Platform names the service manager in use (e.g. "linux-systemd", "windows-service").
func (m *Manager) Platform() string { return m.svc.Platform() }

// Install registers the service (enabled at boot, restart on failure).
func (m *Manager) Install() error { return wrap("install", m.svc.Install()) }

// Uninstall removes the service.
func (m *Manager) Uninstall() error { return wrap("uninstall", m.svc.Uninstall()) }

// Start starts the installed service.
func (m *Manager) Start() error { return wrap("start", m.svc.Start()) }

// Stop stops the service.
func (m *Manager) Stop() error { return wrap("stop", m.svc.Stop()) }

// Status reports "running", "stopped" or "not installed".
func (m *Manager) Status() (string, error) {
	st, err := m.svc.Status()
	switch {
	case errors.Is(err, kservice.ErrNotInstalled):
		return "not installed", nil
	case err != nil:
		return "unknown", wrap("status", err)
	case st == kservice.StatusRunning:
		return "running", nil
	case st == kservice.StatusStopped:
		return "stopped", nil
	}
	return "unknown", nil
}

func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("service %s %s: %w", Name, op, err)
}
