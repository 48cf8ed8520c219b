package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/keyring"
	"github.com/myriarch/myriarch/agent/mode"
	"github.com/myriarch/myriarch/agent/modes"
	"github.com/myriarch/myriarch/agent/updater"
	ikeyring "github.com/myriarch/myriarch/internal/keyring"
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
func installOptions(cfg *config.Config, dl download.Options, obs install.Observer, ring *keyring.Ring) install.Options {
	o := install.Options{
		Sigstore:           cfg.Trust.SigstorePolicy(),
		Observer:           obs,
		StateDir:           cfg.StateDir,
		MinisignPublicKeys: cfg.Trust.MinisignPublicKeys,
		MinisignKeys:       cfg.Trust.Keyring(),
		RequireSignature:   cfg.Trust.RequireSignature,
		AllowDowngrade:     cfg.Trust.AllowDowngrade,
		HealthWindow:       cfg.Collector.HealthWindow,
		MaxPackageSize:     int64(cfg.Collector.MaxPackageSize),
		Download:           dl,
	}
	if ring != nil {
		o.Keyring = ring
	}
	return o
}

// newEngine builds the install engine of the collector mode rt, whose
// downloads go to the server's origin, which serves artifacts only to
// agents presenting their credential. It returns nil (offers are then
// refused by the updater) when that transport or the engine cannot be
// built, e.g. signatures are required but no key is configured.
func newEngine(cfg *config.Config, rt mode.Runtime, log *slog.Logger, obs install.Observer, ring *keyring.Ring, restart func(string)) *install.Engine {
	tr, err := updater.ServerTransport(cfg, download.DefaultConnectTimeout, download.DefaultIdleTimeout)
	if err != nil {
		log.Warn("package installation not enabled", "err", err)
		return nil
	}
	eng, err := rt.NewEngine(installOptions(cfg, download.Options{Transport: tr, AllowedHosts: cfg.Trust.HostPatterns()}, obs, ring), log, restart)
	if err != nil {
		log.Warn("package installation not enabled", "err", err)
		return nil
	}
	return eng
}

// runUpdater is what `run` does until ctx ends: build the collector mode's
// runtime, its install engine and the updater, replay any unfinished
// install, then connect and report. It returns a *restartRequest after a
// self-update.
func runUpdater(ctx context.Context, cfg *config.Config, log *slog.Logger, own *ownTelemetry) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	rt, err := modes.For(cfg, log)
	if err != nil {
		return err
	}
	opts := []updater.Option{updater.WithRuntime(rt), updater.WithOwnTelemetry(own.exporter), updater.WithProvidersObserver(own.counters)}
	var ring *keyring.Ring
	if len(cfg.Trust.RootKeys) > 0 {
		if ring, err = keyring.Open(cfg.StateDir, cfg.Trust.RootKeys); err != nil {
			return err
		}
		opts = append(opts, updater.WithKeyring(ring))
		if why := ring.Attributes()[ikeyring.AttrRefused]; why != "" {
			log.Error("keyring", "err", why)
		}
	}
	eng := newEngine(cfg, rt, log, own.counters, ring, func(reason string) { cancel(&restartRequest{reason}) })
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
