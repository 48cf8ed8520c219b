package binary

import "github.com/myriarch/myriarch/agent/crashpoint"

// Environment variables of the crash-test hook.
const (
	CrashAtEnv   = crashpoint.AtEnv
	CrashModeEnv = crashpoint.ModeEnv // "kill" (default) or "pause"
)

// Crash points, in transaction order. Recovery must bring the collector
// back to the old or the new version from each of them.
const (
	cpAdmitted          = "admitted"
	cpDownloading       = "downloading"
	cpDownloaded        = "downloaded"
	cpVerified          = "verified"
	cpUnpacked          = "unpacked"
	cpVersionChecked    = "version-checked"
	cpActivating        = "activating"
	cpSupervisorStopped = "supervisor-stopped"
	cpLinkStaged        = "link-staged"
	cpSwitched          = "switched"
	cpSwitchRecorded    = "switch-recorded"
	cpSupervisorStarted = "supervisor-started"
	cpHealthGate        = "health-gate"
	cpHealthy           = "healthy"
	cpInstalledRecorded = "installed-recorded"
	cpGarbageCollected  = "garbage-collected"
	cpCommitted         = "committed"
	cpRollbackBegin     = "rollback-begin"
	cpRollbackStopped   = "rollback-stopped"
	cpFailedLogKept     = "failed-log-kept"
	cpRollbackLinkStage = "rollback-link-staged"
	cpRollbackSwitched  = "rollback-switched"
	cpRollbackStarted   = "rollback-started"
	cpRollbackVerified  = "rollback-verified"
	cpQuarantined       = "quarantined"
	cpRecoverBegin      = "recover-begin"
)

// CrashPoints lists every named crash point of a collector install.
var CrashPoints = []string{
	cpAdmitted, cpDownloading, cpDownloaded, cpVerified, cpUnpacked, cpVersionChecked,
	cpActivating, cpSupervisorStopped, cpLinkStaged, cpSwitched, cpSwitchRecorded,
	cpSupervisorStarted, cpHealthGate, cpHealthy, cpInstalledRecorded, cpGarbageCollected,
	cpCommitted, cpRollbackBegin, cpRollbackStopped, cpFailedLogKept, cpRollbackLinkStage,
	cpRollbackSwitched, cpRollbackStarted, cpRollbackVerified, cpQuarantined, cpRecoverBegin,
}

// crashPoint kills (or pauses) the process when the test hook names point.
func (e *Engine) crashPoint(point string) {
	crashpoint.Reach(point, e.crashAt, e.onStep)
}
