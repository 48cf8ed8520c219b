// Package install is the updater's binary-mode install engine: it turns a
// server offer of a collector package (an Addon named collector.package) or
// of the updater itself (the TopLevel package "myriarch-updater") into one
// transaction that either completes or leaves the previous version running.
//
// The collector transaction:
//
//	admission → download (state_dir/staging) → verify (SHA-256 + minisign,
//	pinned keys) → unpack (<root>/versions/<version>-<sha8>) → pre-activation
//	`--version` check → stop supervisor → switch <root>/current → start
//	supervisor → health gate (local signals only) → commit, or rollback
//	(switch back, restart, check the old collector runs, keep the failed
//	collector's agent.log in state_dir/failed/<version>/, quarantine the hash)
//
// Every step boundary is recorded in an fsync'ed journal (agent/journal);
// Engine.Recover replays an unfinished transaction at start: it finishes it
// when activation completed and the health gate passes, and rolls back
// otherwise. The supervisor is controlled through the narrow Controller
// interface and statuses go out through Reporter, so the engine has no
// dependency on the OpAMP client or on how the supervisor is run.
//
// For crash tests, MYRIARCH_TEST_CRASH_AT=<crash point> makes the process
// kill itself with SIGKILL (or, with MYRIARCH_TEST_CRASH_MODE=pause, print
// "MYRIARCH_CRASHPOINT <name>" to stderr and block so a test can kill it) at
// the named point; CrashPoints lists them.
//
// Wiring (agent/updater, binary mode):
//
//	eng, err := install.New(install.Options{
//		Package: cfg.Collector.Package, Root: cfg.Collector.Root, Executable: cfg.Collector.Executable,
//		HealthWindow: cfg.Collector.HealthWindow, MaxPackageSize: int64(cfg.Collector.MaxPackageSize),
//		MinisignPublicKeys: cfg.Trust.MinisignPublicKeys, RequireSignature: cfg.Trust.RequireSignature,
//		AllowDowngrade: cfg.Trust.AllowDowngrade, StateDir: cfg.StateDir,
//		StorageDir: cfg.Supervisor.StorageDir, HealthcheckURL: "", // supervisor healthcheck.endpoint, if any
//		UpdaterVersion: buildinfo.Version, RequestRestart: func(string) { cancelRun(errRestart) },
//	}, supervisorController, nil, log)
//	if err := eng.Recover(runCtx); err != nil { log.Warn(...) } // before connecting
//	defer eng.Close()
//	updater.New(..., updater.WithPackageHandler(engineHandler{eng}))
//
//	// engineHandler adapts the engine to updater.PackageHandler
//	// (LastStatuses is promoted from *install.Engine).
//	type engineHandler struct{ *install.Engine }
//
//	func (h engineHandler) HandlePackages(ctx context.Context, o *protobufs.PackagesAvailable, report updater.StatusReporter) {
//		h.SetReporter(install.ReporterFunc(report))
//		h.Offer(ctx, o)
//	}
//
// After RequestRestart the process must exit with a non-zero status so the
// service manager (systemd Restart=on-failure/always, Windows service
// recovery) starts the new binary; at that start Recover confirms the
// self-update or restores the old binary (and requests a restart again).
package binary
