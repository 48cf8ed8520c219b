// Package service installs, controls and runs myriarch-updater as an OS
// service through github.com/kardianos/service: a systemd unit on Linux and
// an SCM service on Windows, both set to restart the updater when it fails.
package service

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	kservice "github.com/kardianos/service"
)

// Name is the OS service name.
const Name = "myriarch-updater"

// Config is the kardianos service definition for an updater that runs
// `<executable> run --config <configPath>`. An empty executable means the
// running binary. On systemd it installs SystemdUnit (unit.go), the unit the
// package ships.
func Config(configPath, executable string) *kservice.Config {
	executable = resolveExecutable(executable)
	return &kservice.Config{
		Name:        Name,
		DisplayName: "Myriarch Updater",
		Description: "Myriarch updater: keeps the OpenTelemetry Collector up to date and paired with the myriarch server",
		Executable:  executable,
		// --service: the SCM started it (Wine's SCM cannot be recognised).
		Arguments: []string{"run", "--config", configPath, "--service"},
		// No Dependencies: the unit orders itself after network-online.target, and on
		// Windows kardianos would pass them to the SCM as names of services to wait for.
		Option: kservice.KeyValue{
			// systemd: the rendered unit. kardianos reads it as its template; the unit
			// holds no {{ unless a path does, which then fails the install.
			"SystemdScript": SystemdUnit(executable, configPath),
			// Windows SCM: restart 5 s after a failure; forget failures after a day.
			"OnFailure":              "restart",
			"OnFailureDelayDuration": "5s",
			"OnFailureResetPeriod":   86400,
			// Delayed automatic start is set after the install (delayStart):
			// a manager that refuses it then keeps the service.
			"StartType": "automatic",
		},
	}
}

// resolveExecutable makes executable absolute, the running binary when it is empty,
// as kardianos does. When that fails it stays as given and kardianos' install reports
// the same failure.
func resolveExecutable(executable string) string {
	if executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return ""
		}
		executable = exe
	}
	if abs, err := filepath.Abs(executable); err == nil {
		return abs
	}
	return executable
}

// Manager installs and controls the service.
type Manager struct {
	svc kservice.Service
	// Warning, set by Install, says what was installed otherwise than
	// asked ("" when nothing).
	Warning string
}

// idle is the kardianos program for control commands, which never run it.
type idle struct{}

func (idle) Start(kservice.Service) error { return nil }
func (idle) Stop(kservice.Service) error  { return nil }

// New returns a Manager for the service that runs the updater with configPath.
func New(configPath string) (*Manager, error) { return NewFor(configPath, "") }

// NewFor returns a Manager for the service that runs executable with
// configPath: the site setup registers the updater it installed, not the
// binary running the setup.
func NewFor(configPath, executable string) (*Manager, error) {
	s, err := kservice.New(idle{}, Config(configPath, executable))
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	return &Manager{svc: s}, nil
}

// Platform names the service manager in use (e.g. "linux-systemd", "windows-service").
func (m *Manager) Platform() string { return m.svc.Platform() }

// Install registers the service (enabled at boot, restart on failure;
// on Windows started delayed, unless the service manager refuses it — Wine's
// does — which Warning then says).
func (m *Manager) Install() error {
	if err := m.svc.Install(); err != nil {
		return wrap("install", err)
	}
	warning, err := delayStart()
	m.Warning = warning
	return wrap("install", err)
}

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
