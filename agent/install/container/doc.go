// Package container is the updater's container-mode install engine: the
// collector (with its supervisor) runs as a Docker container named
// container.name, and an offered collector package is a new image for it.
//
// Offers:
//
//   - docker://<ref>@sha256:<hex> — the image is pulled by digest (registry
//     credentials come from the offer's headers, see registryAuth) and the
//     pulled manifest digest must equal file.content_hash. A signature, when
//     present (required with trust.require_signature), is a minisign
//     signature of the digest text "sha256:<hex>".
//   - http(s)://… — an image tarball (`docker save` format): downloaded with
//     agent/download (hash on the fly, resume, size cap, disk pre-check),
//     verified with agent/verify (SHA-256 + minisign, pinned keys), then
//     loaded with ImageLoad.
//
// Either way the image's org.opencontainers.image.version label must equal
// the offered version.
//
// The swap starts the new container before removing the old one:
//
//	admission → image ready+verified → inspect <name>, build the create
//	request that reproduces it (refuse what cannot be reproduced: nothing
//	touched) → create <name>-next, re-inspect it and compare → stop <name>
//	(kept) → start <name>-next → health gate (running and not restarted for
//	the health window; Docker HEALTHCHECK healthy when the image has one;
//	the supervisor health endpoint when configured; the supervisor instance
//	UID in its storage dir unchanged) → remove <name> → rename <name>-next
//	to <name>, or rollback (remove <name>-next, start <name>, quarantine the
//	hash, InstallFailed).
//
// While the old container is kept stopped its restart policy is set to
// "no" (a daemon restart must not start it next to the new one); a rollback
// restores it. Faults are classed like binary mode: a bad image (hash,
// signature, version label, health gate) quarantines its hash for good, a
// transient fault (registry, network, engine) delays a retry with backoff,
// and a refusal about the container itself (a setting that cannot be
// reproduced, no container of that name) is reported without quarantine.
// A TopLevel offer (self-update) is refused: in container mode the updater
// is replaced with its own image.
//
// Every step is recorded in the same fsync'ed journal as binary mode
// (agent/journal, Kind "container"; PrevDir/NewDir hold the old and new
// container IDs). Engine.Recover replays an unfinished swap at start and
// also reconciles leftovers without a journal, so that after a crash at any
// step exactly one container named <name> runs.
//
// For crash tests, MYRIARCH_TEST_CRASH_AT=<point> kills the process with
// SIGKILL at the named point (MYRIARCH_TEST_CRASH_MODE=pause blocks there
// after printing "MYRIARCH_CRASHPOINT <point>"); CrashPoints lists them.
//
// Wiring (agent/updater in container mode; *Engine implements
// updater.PackageHandler directly):
//
//	eng, err := container.New(container.Options{
//		Name: cfg.Container.Name, DockerHost: cfg.Container.DockerHost,
//		Package: cfg.Collector.Package, HealthWindow: cfg.Collector.HealthWindow,
//		MaxPackageSize: int64(cfg.Collector.MaxPackageSize),
//		MinisignPublicKeys: cfg.Trust.MinisignPublicKeys, RequireSignature: cfg.Trust.RequireSignature,
//		AllowDowngrade: cfg.Trust.AllowDowngrade, StateDir: cfg.StateDir,
//		StorageDir: cfg.Supervisor.StorageDir, // path INSIDE the container
//		HealthcheckURL: "",                    // supervisor healthcheck endpoint, if any
//	}, log)
//	if err := eng.Recover(runCtx); err != nil { log.Warn(...) } // before connecting
//	defer eng.Close()
//	updater.New(..., updater.WithPackageHandler(eng))
//	// eng.Image() gives the running image's version and digest for
//	// dev.myriarch.collector.image.version / an image digest attribute.
package container
