// Package install is the updater's install transaction: it turns a
// server offer of a package into one transaction that either completes or
// leaves what ran before running, whatever the package is. Back-ends do
// what differs per kind of package (Backend): agent/install/binary switches
// <root>/current to a new collector binary, agent/install/container swaps
// the collector container, agent/install/selfupdate replaces the updater's
// own binary.
//
// The transaction, one at a time (a newer offer of a package replaces one
// still queued):
//
//	admission (package name and type, download URL, content hash, the
//	  back-end's own checks, trust.*: version syntax, required signature,
//	  downgrade to a version this host has not confirmed healthy, the
//	  quarantine of hashes that failed before)
//	→ prepare (the back-end looks at what runs; Preparer)
//	→ acquire (a download into state_dir/staging: hashed on the fly,
//	  resumed, size-capped; or the back-end's Fetcher, e.g. a pull by digest)
//	→ verify (SHA-256 + minisign with pinned keys: one policy function,
//	  Txn.VerifySignature)
//	→ stage and pre-activation check (Backend.Stage)
//	→ what runs judged, when no confirmation of it is recorded
//	  (RunningConfirmer), and recorded as confirmed healthy if it passes
//	→ activate (Backend.Activate)
//	→ health gate on local signals (Backend.Gate)
//	→ commit (Backend.Commit), the version recorded as confirmed healthy
//	  (agent/confirmed); or rollback (Backend.Rollback) and the hash
//	  quarantined
//
// Statuses go to the server as the OpAMP PackageStatuses (InstallPending,
// Downloading with progress, Installing, then Installed or InstallFailed
// with the reason); terminal ones are persisted and reported again after a
// restart. A failure before activation leaves what runs untouched; its
// fault class (Fault) decides what the quarantine does with the hash.
//
// Every step boundary is recorded in an fsync'ed journal (agent/journal)
// and is a crash point. Engine.Recover replays an unfinished transaction at
// start: abandoned when its new version never ran, judged by the health
// gate when it was started, finished when it passed, rolled back when a
// rollback was under way. A back-end whose new version is the restarted
// updater itself (LiveGater) is judged by the worker while the updater
// runs, so that a new updater that crashes or is restarted before it has
// stayed up a while is caught at its next starts and rolled back. For crash tests, MYRIARCH_TEST_CRASH_AT=<crash
// point> makes the updater kill itself at the point (CrashAtEnv,
// CrashModeEnv); each back-end lists its points (Description.CrashPoints),
// and agent/install/installtest runs the contract suite every back-end
// passes.
//
// Each back-end keeps its own files under state_dir with the names its
// Layout gives; ReadStatus reads a state dir through it, with the journal
// and the self-update marker (SelfUpdateMarkerFile), for
// `myriarch-updater status`.
//
// Wiring (agent/mode/binarymode; each collector mode builds its engine in
// its Runtime.NewEngine):
//
//	bin, _ := binary.New(binary.Options{Package: …, Root: …, Executable: …, StorageDir: …}, supervisorController)
//	self, _ := selfupdate.NewBackend(selfupdate.Options{Version: buildinfo.Version, RequestRestart: exitForRestart})
//	eng, err := install.New(install.Options{StateDir: …, MinisignPublicKeys: …, RequireSignature: …,
//		AllowDowngrade: …, HealthWindow: …, MaxPackageSize: …, Download: …}, log, bin, self)
//	if err := eng.Recover(runCtx); err != nil { log.Warn(…) } // before connecting
//	defer eng.Close()
//	updater.New(cfg, log, updater.WithPackageHandler(eng))
package install
