// Package modes chooses the collector mode (agent/mode) that updater.yaml's
// mode names. It is the one place that knows every mode.
package modes

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/mode"
	"github.com/myriarch/myriarch/agent/mode/binarymode"
	"github.com/myriarch/myriarch/agent/mode/containermode"
)

// all are the collector modes by name (config.Config.Mode): one line each.
var all = map[string]func() mode.Mode{
	config.ModeBinary:    binarymode.Mode,
	config.ModeContainer: containermode.Mode,
}

// Names lists the modes, sorted.
func Names() []string { return slices.Sorted(maps.Keys(all)) }

// Lookup returns the mode called name; an unknown name is an error naming
// it and the known ones.
func Lookup(name string) (mode.Mode, error) {
	m, ok := all[name]
	if !ok {
		return mode.Mode{}, fmt.Errorf("unknown collector mode %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return m(), nil
}

// For builds the Runtime of cfg's mode (log nil: discard).
func For(cfg *config.Config, log *slog.Logger) (mode.Runtime, error) {
	m, err := Lookup(cfg.Mode)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rt, err := m.New(cfg, log)
	if err != nil {
		return nil, fmt.Errorf("%s mode: %w", cfg.Mode, err)
	}
	return rt, nil
}
