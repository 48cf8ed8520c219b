package container

import (
	"fmt"
	"os"
)

// Environment variables of the crash-test hook (the same as binary mode).
const (
	CrashAtEnv   = "MYRIARCH_TEST_CRASH_AT"
	CrashModeEnv = "MYRIARCH_TEST_CRASH_MODE" // "kill" (default) or "pause"
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
	if e.onStep != nil {
		e.onStep(point)
	}
	if e.crashAt == "" || e.crashAt != point {
		return
	}
	fmt.Fprintf(os.Stderr, "MYRIARCH_CRASHPOINT %s\n", point)
	if os.Getenv(CrashModeEnv) == "pause" {
		select {}
	}
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill() // SIGKILL: no deferred function runs
	}
	select {}
}
