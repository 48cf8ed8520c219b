// Package providers supplies the data that ${…} variable substitution reads:
// context providers (agent, host, env, local) and dynamic providers
// (local_dynamic, docker) that yield one mapping per discovered thing.
package providers

import (
	"context"
	"errors"
	"io"
	"log/slog"
)

// Config is the `providers:` section of the updater configuration.
// Each provider can be switched off with `<name>: {enabled: false}`.
type Config struct {
	Agent        ToggleConfig       `yaml:"agent"`
	Host         ToggleConfig       `yaml:"host"`
	Env          ToggleConfig       `yaml:"env"`
	Local        LocalConfig        `yaml:"local"`
	LocalDynamic LocalDynamicConfig `yaml:"local_dynamic"`
	Docker       DockerConfig       `yaml:"docker"`
}

// ToggleConfig is a provider with nothing to set but whether it runs.
type ToggleConfig struct {
	Enabled *bool `yaml:"enabled"`
}

// LocalConfig holds operator-set static variables.
type LocalConfig struct {
	Enabled *bool          `yaml:"enabled"`
	Vars    map[string]any `yaml:"vars"`
}

// LocalDynamicConfig lists static mappings, one per item.
type LocalDynamicConfig struct {
	Enabled *bool              `yaml:"enabled"`
	Items   []LocalDynamicItem `yaml:"items"`
}

// LocalDynamicItem is one mapping of the local_dynamic provider.
type LocalDynamicItem struct {
	Vars       map[string]any `yaml:"vars"`
	Processors []any          `yaml:"processors"`
}

// DockerConfig configures discovery of running containers.
type DockerConfig struct {
	Enabled *bool  `yaml:"enabled"`
	Host    string `yaml:"host"`
}

// Validate reports every problem in the providers section.
func (c *Config) Validate() error { return nil }

// Inspect prints the current context and mappings as JSON to w; with watch it
// streams every new snapshot until ctx ends.
func Inspect(ctx context.Context, cfg Config, watch bool, w io.Writer, log *slog.Logger) error {
	return errors.ErrUnsupported
}
