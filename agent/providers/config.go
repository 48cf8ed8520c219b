// Package providers supplies the data that ${…} variable substitution reads:
// context providers (agent, host, env, local) and dynamic providers
// (local_dynamic, docker) that yield one mapping per discovered thing.
// A Manager runs the enabled providers, restarts failed ones with backoff
// and publishes debounced, complete snapshots.
package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/moby/moby/client"

	"github.com/myriarch/myriarch/internal/vars"
)

// Config is the `providers:` section of the updater configuration.
// Each provider can be switched off with `<name>: {enabled: false}`.
type Config struct {
	Agent        ToggleConfig       `yaml:"agent"`
	Host         HostConfig         `yaml:"host"`
	Env          EnvConfig          `yaml:"env"`
	Local        LocalConfig        `yaml:"local"`
	LocalDynamic LocalDynamicConfig `yaml:"local_dynamic"`
	Docker       DockerConfig       `yaml:"docker"`

	// AgentID is published as ${agent.id}. It is not configuration: the
	// updater sets it from its identity before starting the providers.
	AgentID string `yaml:"-"`
}

// ToggleConfig is a provider with nothing to set but whether it runs.
type ToggleConfig struct {
	Enabled *bool `yaml:"enabled"`
}

// HostConfig is the host provider: name, platform, architecture, OS, and
// the addresses of its interfaces, which ip: false and mac: false leave out.
type HostConfig struct {
	Enabled *bool `yaml:"enabled"`
	IP      *bool `yaml:"ip"`
	MAC     *bool `yaml:"mac"`
}

// EnvConfig is the env provider. It publishes only the variables Allow
// names — NAME exactly, or PREFIX_* for every name with that prefix — so
// by default nothing of the environment leaves the host.
type EnvConfig struct {
	Enabled *bool    `yaml:"enabled"`
	Allow   []string `yaml:"allow"`
}

// allows reports whether the environment variable name is allowed.
func (c EnvConfig) allows(name string) bool {
	for _, a := range c.Allow {
		if p, ok := strings.CutSuffix(a, "*"); ok {
			if strings.HasPrefix(name, p) {
				return true
			}
		} else if a == name {
			return true
		}
	}
	return false
}

// LocalConfig holds operator-set static variables.
type LocalConfig struct {
	Enabled *bool          `yaml:"enabled"`
	Vars    map[string]any `yaml:"vars"`
}

// DockerConfig configures discovery of running containers.
type DockerConfig struct {
	Enabled *bool `yaml:"enabled"`
	// Host is the engine address (unix:///var/run/docker.sock,
	// tcp://127.0.0.1:2375); empty means DOCKER_HOST or the platform default.
	Host string `yaml:"host"`
}

// on reports whether a provider runs: every provider is enabled unless
// switched off.
func on(enabled *bool) bool { return enabled == nil || *enabled }

// Validate reports every problem in the providers section, each with its
// path.
func (c *Config) Validate() error {
	var errs []error
	if c.Local.Vars != nil {
		if _, err := vars.Normalize(c.Local.Vars); err != nil {
			errs = append(errs, fmt.Errorf("providers.local.vars: %w", err))
		}
	}
	errs = append(errs, c.LocalDynamic.validate()...)
	for i, a := range c.Env.Allow {
		name := strings.TrimSuffix(a, "*")
		if name == "" || strings.ContainsAny(name, "*=\x00") {
			errs = append(errs, fmt.Errorf("providers.env.allow[%d]: %q is not a variable name or a PREFIX_* pattern", i, a))
		}
	}
	if c.Docker.Host != "" {
		if _, err := client.ParseHostURL(c.Docker.Host); err != nil {
			errs = append(errs, fmt.Errorf("providers.docker.host: %q: %w", c.Docker.Host, err))
		}
	}
	return errors.Join(errs...)
}

// New validates cfg and returns a Manager running its enabled providers.
func New(cfg Config, log *slog.Logger, opts Options) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.AgentID == "" {
		opts.AgentID = cfg.AgentID
	}
	m := NewManager(log, opts)
	o := m.opts
	if on(cfg.Agent.Enabled) {
		m.AddContext(&agentProvider{id: o.AgentID})
	}
	if on(cfg.Host.Enabled) {
		m.AddContext(&hostProvider{refresh: o.HostRefresh, log: m.log, noIP: !on(cfg.Host.IP), noMAC: !on(cfg.Host.MAC)})
	}
	if on(cfg.Env.Enabled) {
		m.AddContext(newEnvProvider(cfg.Env))
	}
	if on(cfg.Local.Enabled) {
		v, _ := vars.Normalize(cfg.Local.Vars) // validated above
		local, _ := v.(map[string]any)
		m.AddContext(newLocalProvider(local))
	}
	if on(cfg.LocalDynamic.Enabled) {
		m.AddDynamic(&localDynamic{items: cfg.LocalDynamic.items()}, PriorityLocalDynamic)
	}
	if on(cfg.Docker.Enabled) {
		m.AddDynamic(&dockerProvider{host: cfg.Docker.Host, retry: o.DockerRetry, log: m.log}, PriorityDocker)
	}
	return m, nil
}

// Inspect prints the current context and mappings as JSON to w; with watch it
// streams every new snapshot until ctx ends.
func Inspect(ctx context.Context, cfg Config, watch bool, w io.Writer, log *slog.Logger) error {
	m, err := New(cfg, log, Options{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var writeErr error
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	runErr := m.Run(ctx, func(s Snapshot) {
		if writeErr != nil {
			return
		}
		if err := enc.Encode(s); err != nil {
			writeErr = fmt.Errorf("inspect: writing snapshot: %w", err)
			cancel()
			return
		}
		if !watch {
			cancel()
		}
	})
	return errors.Join(runErr, writeErr)
}
