package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/install/binary"
	"github.com/myriarch/myriarch/agent/install/container"
	"github.com/myriarch/myriarch/agent/install/selfupdate"
	"github.com/myriarch/myriarch/agent/supervisor"
	"github.com/myriarch/myriarch/agent/updater"
	"github.com/myriarch/myriarch/internal/buildinfo"
)

// restartRequest ends `run` after a self-update replaced the binary: the
// process exits non-zero so the service manager starts the new binary.
type restartRequest struct{ reason string }

func (r *restartRequest) Error() string { return "restart requested: " + r.reason }

// ExitCode makes `run` exit with exitRestart (service.ExitCode); the
// Windows service reports it as its service-specific exit code.
func (r *restartRequest) ExitCode() int { return exitRestart }

// exitRestart is the exit status after a self-update (non-zero so systemd's
// Restart=on-failure and Windows service recovery start the new binary).
const exitRestart = 3

// installOptions maps updater.yaml to what every install back-end shares.
func installOptions(cfg *config.Config, dl download.Options) install.Options {
	return install.Options{
		StateDir:           cfg.StateDir,
		MinisignPublicKeys: cfg.Trust.MinisignPublicKeys,
		RequireSignature:   cfg.Trust.RequireSignature,
		AllowDowngrade:     cfg.Trust.AllowDowngrade,
		HealthWindow:       cfg.Collector.HealthWindow,
		MaxPackageSize:     int64(cfg.Collector.MaxPackageSize),
		Download:           dl,
	}
}

// newInstallEngine builds the binary-mode install engine (the collector
// binary and the updater itself), or returns nil (offers are then refused
// by the updater) when local policy cannot allow installs, e.g. signatures
// are required but no key is configured.
func newInstallEngine(cfg *config.Config, ctl supervisor.Controller, log *slog.Logger, restart func(string)) *install.Engine {
	return newEngine(cfg, log, func(o install.Options) (*install.Engine, error) {
		bin, err := binary.New(binary.Options{
			Package:    cfg.Collector.Package,
			Root:       cfg.Collector.Root,
			Executable: cfg.Collector.Executable,
			StorageDir: cfg.Supervisor.StorageDir,
		}, ctl)
		if err != nil {
			return nil, err
		}
		self, err := selfupdate.NewBackend(selfupdate.Options{Version: buildinfo.Version, RequestRestart: restart})
		if err != nil {
			return nil, err
		}
		return install.New(o, log, bin, self)
	})
}

// newContainerEngine builds the container-mode install engine, or returns
// nil (offers are then refused) when local policy cannot allow installs.
func newContainerEngine(cfg *config.Config, log *slog.Logger) *install.Engine {
	return newEngine(cfg, log, func(o install.Options) (*install.Engine, error) {
		b, err := container.New(container.Options{
			Name:       cfg.Container.Name,
			DockerHost: cfg.Container.DockerHost,
			Package:    cfg.Collector.Package,
			// The installer mounts the storage dir at the same path inside the
			// collector container as on the host.
			StorageDir: cfg.Supervisor.StorageDir,
		})
		if err != nil {
			return nil, err
		}
		o.StatePrefix, o.NoSelfUpdate = container.StatePrefix, container.NoSelfUpdate
		eng, err := install.New(o, log, b)
		if err != nil {
			b.Close()
		}
		return eng, err
	})
}

// newEngine builds an install engine of either mode whose downloads go to
// the server's origin, which serves artifacts only to agents presenting
// their credential. It returns nil (offers are then refused by the
// updater) when that transport or the engine cannot be built.
func newEngine(cfg *config.Config, log *slog.Logger, build func(install.Options) (*install.Engine, error)) *install.Engine {
	tr, err := updater.ServerTransport(cfg, download.DefaultConnectTimeout, download.DefaultIdleTimeout)
	if err != nil {
		log.Warn("package installation not enabled", "err", err)
		return nil
	}
	eng, err := build(installOptions(cfg, download.Options{Transport: tr, AllowedHosts: cfg.Trust.HostPatterns()}))
	if err != nil {
		log.Warn("package installation not enabled", "err", err)
		return nil
	}
	return eng
}

// runUpdater is what `run` does until ctx ends: build the supervisor
// controller, the install engine for the mode and the updater, replay any
// unfinished install, then connect and report. It returns a
// *restartRequest after a self-update.
func runUpdater(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var (
		opts []updater.Option
		eng  *install.Engine
	)
	switch cfg.Mode {
	case config.ModeBinary:
		ctl, err := supervisor.New(cfg.Supervisor, log)
		if err != nil {
			return err
		}
		opts = append(opts, updater.WithSupervisorController(ctl))
		eng = newInstallEngine(cfg, ctl, log, func(reason string) { cancel(&restartRequest{reason}) })
	case config.ModeContainer:
		eng = newContainerEngine(cfg, log)
	}
	if eng != nil {
		defer eng.Close() // after u.Run has returned
		opts = append(opts, updater.WithPackageHandler(eng))
	}
	u, err := updater.New(cfg, log, opts...)
	if err != nil {
		return err
	}
	if eng != nil {
		// Finish or roll back an install interrupted by a crash or power
		// loss before reporting anything.
		if err := eng.Recover(ctx); err != nil {
			log.Warn("recovering the previous install", "err", err)
		}
	}
	if err := u.Run(ctx); err != nil {
		return err
	}
	var r *restartRequest
	if errors.As(context.Cause(ctx), &r) {
		return r
	}
	return nil
}
