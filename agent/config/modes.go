package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Collector modes (Config.Mode). Each has its implementation in
// agent/runtime/<mode>; see the checklist in agent/doc.go.
const (
	ModeBinary    = "binary"
	ModeContainer = "container"
)

// adder records one problem at a YAML path.
type adder = func(path, format string, args ...any)

// modeChecks are, per collector mode, the checks of the settings only that
// mode reads. A mode that reads no settings of its own has a nil check.
var modeChecks = map[string]func(c *Config, add adder){
	ModeBinary:    func(c *Config, add adder) { c.Supervisor.validateControl(add) },
	ModeContainer: func(c *Config, add adder) { c.Container.validate(add) },
}

// Modes lists the collector modes Config.Mode accepts, sorted.
func Modes() []string {
	names := make([]string, 0, len(modeChecks))
	for m := range modeChecks {
		names = append(names, m)
	}
	slices.Sort(names)
	return names
}

// validateMode checks mode and the settings only that mode reads.
func (c *Config) validateMode(add adder) {
	check, ok := modeChecks[c.Mode]
	if !ok {
		add("mode", "must be %s, got %q", oneOf(Modes()), c.Mode)
		return
	}
	if check != nil {
		check(c, add)
	}
}

// oneOf quotes names as `"a", "b" or "c"`.
func oneOf(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// validateControl checks how the updater controls the supervisor (binary
// mode: an OS service or a child process).
func (s *SupervisorConfig) validateControl(add adder) {
	switch s.Control {
	case ControlService:
		if strings.TrimSpace(s.Service) == "" {
			add("supervisor.service", "required when supervisor.control is %q", ControlService)
		}
	case ControlProcess:
		if len(s.Command) == 0 || strings.TrimSpace(s.Command[0]) == "" {
			add("supervisor.command", "required when supervisor.control is %q: the supervisor executable and its arguments", ControlProcess)
		}
	default:
		add("supervisor.control", "must be %q or %q, got %q", ControlService, ControlProcess, s.Control)
	}
}

// validate checks the collector container's settings (container mode).
func (c *ContainerConfig) validate(add adder) {
	if strings.TrimSpace(c.Name) == "" {
		add("container.name", "required in container mode")
	}
	if u, err := url.Parse(c.DockerHost); err != nil || !slices.Contains([]string{"unix", "npipe", "tcp", "http", "https"}, u.Scheme) {
		add("container.docker_host", "must be a unix://, npipe://, tcp:// or http(s):// URL, got %q", c.DockerHost)
	}
}
