package container

import "github.com/myriarch/myriarch/agent/crashpoint"

// Environment variables of the crash-test hook (the same as binary mode).
const (
	CrashAtEnv   = crashpoint.AtEnv
	CrashModeEnv = crashpoint.ModeEnv // "kill" (default) or "pause"
)

// Crash points (journal steps), in swap order.
const (
	cpAdmitted      = "admitted"
	cpImageReady    = "image-ready"
	cpCreating      = "creating-next"
	cpCreated       = "next-created"
	cpOldStopped    = "old-stopped"
	cpNextStarted   = "next-started"
	cpHealthy       = "healthy"
	cpOldRemoved    = "old-removed"
	cpRenamed       = "renamed"
	cpCommitted     = "committed"
	cpRollbackBegin = "rollback-begin"
	cpNextRemoved   = "rollback-next-removed"
	cpOldRestarted  = "rollback-old-started"
	cpQuarantined   = "quarantined"
	cpRecoverBegin  = "recover-begin"
)

// CrashPoints lists every named crash point of a container swap.
var CrashPoints = []string{
	cpAdmitted, cpImageReady, cpCreating, cpCreated, cpOldStopped, cpNextStarted,
	cpHealthy, cpOldRemoved, cpRenamed, cpCommitted,
	cpRollbackBegin, cpNextRemoved, cpOldRestarted, cpQuarantined, cpRecoverBegin,
}

// crashPoint kills (or pauses) the process when the test hook names point.
func (e *Engine) crashPoint(point string) {
	crashpoint.Reach(point, e.crashAt, e.onStep)
}
