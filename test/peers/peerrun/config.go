package peerrun

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"
)

// NoMetricsArg makes a collector skip its own metrics endpoint
// (localhost:8888), so several collectors can run on one host.
const NoMetricsArg = "--set=service.telemetry.metrics.level=none"

// SupervisorConfig describes an OpAMP Supervisor configuration file.
type SupervisorConfig struct {
	// ServerEndpoint is the OpAMP server, e.g. ws://127.0.0.1:4320/v1/opamp.
	// Only loopback hosts are accepted.
	ServerEndpoint string
	// Headers are sent on the WebSocket upgrade (e.g. an enrollment token).
	Headers map[string]string
	// Collector is agent.executable: the collector the supervisor runs.
	Collector string
	// StorageDir is storage.directory (persistent_state.yaml, effective.yaml,
	// agent.log live there).
	StorageDir string
	// InstanceID optionally fixes agent.instance_id (a UUID); it only
	// matters before persistent_state.yaml exists.
	InstanceID string
	// NonIdentifyingAttributes go to agent.description.non_identifying_attributes.
	NonIdentifyingAttributes map[string]string
	// ExtraArgs are appended to agent.args after NoMetricsArg.
	ExtraArgs []string
	// BootstrapTimeout and ConfigApplyTimeout override the supervisor's
	// defaults (3 s and 5 s) when non-zero.
	BootstrapTimeout   time.Duration
	ConfigApplyTimeout time.Duration
	// OpAMPServerPort is agent.opamp_server_port, the port of the
	// supervisor's own OpAMP server for its collector. When 0, YAML takes
	// one from LocalPort rather than letting the supervisor pick a port
	// that a busy test run's outgoing connections may take first.
	OpAMPServerPort int
	// OwnTelemetry turns the reports_own_* capabilities on and leaves out
	// NoMetricsArg (which silences the collector's own metrics), so the
	// collector sends its own telemetry where the server offers.
	OwnTelemetry bool
	// AgentEnv is agent.env: the collector's environment.
	AgentEnv map[string]string
}

// Validate reports every problem with c.
func (c SupervisorConfig) Validate() error {
	var errs []error
	if c.ServerEndpoint == "" {
		errs = append(errs, errors.New("supervisor config: ServerEndpoint is required"))
	} else if u, err := url.Parse(c.ServerEndpoint); err != nil {
		errs = append(errs, fmt.Errorf("supervisor config: ServerEndpoint %q: %w", c.ServerEndpoint, err))
	} else {
		if u.Scheme != "ws" && u.Scheme != "wss" && u.Scheme != "http" && u.Scheme != "https" {
			errs = append(errs, fmt.Errorf("supervisor config: ServerEndpoint %q: scheme must be ws, wss, http or https", c.ServerEndpoint))
		}
		if h := u.Hostname(); h != "127.0.0.1" && h != "::1" && h != "localhost" {
			errs = append(errs, fmt.Errorf("supervisor config: ServerEndpoint %q: host must be loopback", c.ServerEndpoint))
		}
	}
	if c.Collector == "" {
		errs = append(errs, errors.New("supervisor config: Collector is required"))
	} else if !filepath.IsAbs(c.Collector) {
		errs = append(errs, fmt.Errorf("supervisor config: Collector %q must be an absolute path", c.Collector))
	}
	if c.StorageDir == "" {
		errs = append(errs, errors.New("supervisor config: StorageDir is required"))
	} else if !filepath.IsAbs(c.StorageDir) {
		errs = append(errs, fmt.Errorf("supervisor config: StorageDir %q must be an absolute path", c.StorageDir))
	}
	if c.BootstrapTimeout < 0 {
		errs = append(errs, fmt.Errorf("supervisor config: BootstrapTimeout %v is negative", c.BootstrapTimeout))
	}
	if c.OpAMPServerPort < 0 || c.OpAMPServerPort > 65535 {
		errs = append(errs, fmt.Errorf("supervisor config: OpAMPServerPort %d is not a port", c.OpAMPServerPort))
	}
	if c.ConfigApplyTimeout < 0 {
		errs = append(errs, fmt.Errorf("supervisor config: ConfigApplyTimeout %v is negative", c.ConfigApplyTimeout))
	}
	return errors.Join(errs...)
}

// YAML renders the configuration. The capabilities are those the
// end-to-end scenarios rely on; own telemetry reporting is off so the
// supervisor does not wait for telemetry connection settings.
func (c SupervisorConfig) YAML() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	server := map[string]any{"endpoint": c.ServerEndpoint}
	if len(c.Headers) > 0 {
		// http.Header in the supervisor: one list of values per name.
		h := make(map[string][]string, len(c.Headers))
		for k, v := range c.Headers {
			h[k] = []string{v}
		}
		server["headers"] = h
	}
	if u, _ := url.Parse(c.ServerEndpoint); u.Scheme == "ws" || u.Scheme == "http" {
		server["tls"] = map[string]any{"insecure": true}
	}
	args := append([]string{NoMetricsArg}, c.ExtraArgs...)
	if c.OwnTelemetry {
		args = c.ExtraArgs
	}
	agent := map[string]any{"executable": c.Collector, "args": args}
	if len(c.AgentEnv) > 0 {
		agent["env"] = c.AgentEnv
	}
	if c.InstanceID != "" {
		agent["instance_id"] = c.InstanceID
	}
	if len(c.NonIdentifyingAttributes) > 0 {
		agent["description"] = map[string]any{"non_identifying_attributes": c.NonIdentifyingAttributes}
	}
	if c.BootstrapTimeout > 0 {
		agent["bootstrap_timeout"] = c.BootstrapTimeout.String()
	}
	if c.ConfigApplyTimeout > 0 {
		agent["config_apply_timeout"] = c.ConfigApplyTimeout.String()
	}
	port := c.OpAMPServerPort
	if port == 0 {
		var err error
		if port, err = LocalPort(); err != nil {
			return nil, fmt.Errorf("supervisor config: %w", err)
		}
	}
	agent["opamp_server_port"] = port
	doc := map[string]any{
		"server": server,
		"capabilities": map[string]bool{
			"accepts_remote_config":    true,
			"accepts_restart_command":  true,
			"reports_effective_config": true,
			"reports_remote_config":    true,
			"reports_health":           true,
			"reports_heartbeat":        true,
			"reports_own_metrics":      c.OwnTelemetry,
			"reports_own_logs":         c.OwnTelemetry,
			"reports_own_traces":       c.OwnTelemetry,
		},
		"agent":   agent,
		"storage": map[string]any{"directory": c.StorageDir},
		"telemetry": map[string]any{
			"logs": map[string]any{"level": "info", "output_paths": []string{"stdout"}, "error_output_paths": []string{"stderr"}},
		},
	}
	return yaml.Marshal(doc)
}

// WriteFile renders the configuration to path (mode 0600: it may carry a
// token), creating path's directory.
func (c SupervisorConfig) WriteFile(path string) error {
	data, err := c.YAML()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create directory for %s: %w", path, err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write supervisor config %s: %w", path, err)
	}
	return nil
}
