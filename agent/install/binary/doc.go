// Package binary is the install back-end for collector binaries (binary
// mode): the collector runs under the upstream OpAMP Supervisor from
// <root>/current, a link to <root>/versions/<version>-<sha8>.
//
// Its part of the transaction (agent/install runs the rest: admission,
// download, verification, journal, quarantine, statuses):
//
//	stage: unpack into versions/<version>-<sha8> → `--version` check
//	activate: stop the supervisor → switch current (a new link renamed over
//	  the old one, directory fsync'ed) → start the supervisor
//	health gate: the supervisor runs a collector from the new directory (the
//	  kernel-resolved executable path) and that process stays up for the
//	  health window; the supervisor's healthcheck endpoint answers 200
//	commit: collector-installed.json; every version directory but the
//	  current and the previous one removed
//	rollback: stop → keep the failed collector's agent.log in
//	  state_dir/failed/<version>/ → switch back → start → the previous
//	  collector must come back
//
// The supervisor is controlled through the narrow Controller interface.
// CrashPoints lists the transaction's crash points.
package binary
