// Package mode is the contract of a collector mode: one way the collector
// runs on a host and is installed there (binary mode: a binary under the
// upstream OpAMP Supervisor; container mode: a Docker container). Each mode
// is one package under agent/mode (binarymode, containermode) that provides
// a Mode; agent/modes chooses it from updater.yaml's mode, once, and the
// rest of the updater (agent/updater, cmd/myriarch-updater) only ever sees
// the Runtime it builds.
package mode

import (
	"context"
	"log/slog"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/supervisor"
)

// Description attributes a mode adds (non-identifying).
const (
	// AttrSupervisorService names what the updater restarts: the OS
	// service, the supervisor executable it runs, or the container.
	AttrSupervisorService = "dev.myriarch.supervisor.service"
	// AttrCollectorImageVersion and AttrCollectorImageDigest are the image
	// the collector container runs (container mode).
	AttrCollectorImageVersion = "dev.myriarch.collector.image.version"
	AttrCollectorImageDigest  = "dev.myriarch.collector.image.digest"
)

// Mode is one collector mode: where its install state lives, known without
// building anything (`status` reads it), and how its Runtime is built.
type Mode struct {
	// State is where the mode keeps its install state under state_dir.
	State install.Layout
	// New builds the mode's Runtime for a valid configuration. It starts
	// and connects nothing.
	New func(cfg *config.Config, log *slog.Logger) (Runtime, error)
}

// Runtime is a mode set up for one configuration: how collector packages
// are installed and what the updater controls and reports of the collector.
type Runtime interface {
	// NewEngine builds the mode's install engine, o being the options every
	// mode shares; the mode adds its own (Options.StatePrefix,
	// Options.NoSelfUpdate). restart asks the updater to exit so that the
	// service manager starts the new updater binary (self-update).
	NewEngine(o install.Options, log *slog.Logger, restart func(reason string)) (*install.Engine, error)
	// Supervisor controls the upstream OpAMP Supervisor: the updater runs
	// it when it is a child process. nil when the mode has none to control.
	Supervisor() supervisor.Controller
	// Attributes are the description attributes the configuration fixes
	// (AttrSupervisorService); "" values are not reported.
	Attributes() map[string]string
}

// RunningLooker is an optional capability of a Runtime (found by type
// assertion): it looks up which collector version runs (container mode: the
// container's image). The updater looks at start, for `inspect`, and again
// every poll interval, and reports a failure under the health component
// Component; the attributes of the last successful look are reported.
type RunningLooker interface {
	// LookupRunning returns the description attributes of what runs now
	// (AttrCollectorImageVersion, …); "" values are not reported.
	LookupRunning(ctx context.Context) (map[string]string, error)
	// Component names the health component of the look-up ("container").
	Component() string
}
