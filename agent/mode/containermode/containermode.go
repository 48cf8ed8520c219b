// Package containermode is the container collector mode: the collector
// (with its supervisor) runs as the Docker container container.name,
// offers of the collector are new images for it (agent/install/container),
// and the updater is replaced with its own image, never by an offer.
package containermode

import (
	"context"
	"log/slog"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/install"
	ctr "github.com/myriarch/myriarch/agent/install/container"
	"github.com/myriarch/myriarch/agent/mode"
	"github.com/myriarch/myriarch/agent/supervisor"
)

// Mode is container mode.
func Mode() mode.Mode { return mode.Mode{State: ctr.Layout(), New: New} }

// New builds container mode's Runtime for cfg. It connects to nothing:
// the Docker Engine is reached when an engine is built or the image looked up.
func New(cfg *config.Config, _ *slog.Logger) (mode.Runtime, error) {
	return &runtime{cfg: cfg}, nil
}

type runtime struct {
	cfg *config.Config
}

var (
	_ mode.Runtime       = (*runtime)(nil)
	_ mode.RunningLooker = (*runtime)(nil)
)

// NewEngine swaps the collector container; it refuses offers of the updater.
func (r *runtime) NewEngine(o install.Options, log *slog.Logger, _ func(string)) (*install.Engine, error) {
	b, err := ctr.New(ctr.Options{
		Name:       r.cfg.Container.Name,
		DockerHost: r.cfg.Container.DockerHost,
		Package:    r.cfg.Collector.Package,
		// The installer mounts the storage dir at the same path inside the
		// collector container as on the host.
		StorageDir: r.cfg.Supervisor.StorageDir,
	})
	if err != nil {
		return nil, err
	}
	o.StatePrefix, o.NoSelfUpdate = ctr.Layout().Prefix, ctr.NoSelfUpdate
	eng, err := install.New(o, log, b)
	if err != nil {
		b.Close()
	}
	return eng, err
}

// Supervisor is nil: the supervisor runs inside the container.
func (r *runtime) Supervisor() supervisor.Controller { return nil }

// Attributes names the container as what the updater restarts.
func (r *runtime) Attributes() map[string]string {
	return map[string]string{mode.AttrSupervisorService: r.cfg.Container.Name}
}

// Component is the health component of the image look-up.
func (r *runtime) Component() string { return "container" }

// LookupRunning reports the image the container runs.
func (r *runtime) LookupRunning(ctx context.Context) (map[string]string, error) {
	img, err := imageVersion(ctx, r.cfg.Container.DockerHost, r.cfg.Container.Name)
	if err != nil {
		return nil, err
	}
	return map[string]string{mode.AttrCollectorImageVersion: img.Version, mode.AttrCollectorImageDigest: img.Digest}, nil
}
