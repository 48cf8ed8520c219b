package install

import "github.com/myriarch/myriarch/agent/crashpoint"

// Environment variables of the crash-test hook: MYRIARCH_TEST_CRASH_AT names
// a crash point where the updater kills itself (SIGKILL), or, with
// MYRIARCH_TEST_CRASH_MODE=pause, prints "MYRIARCH_CRASHPOINT <name>" to
// stderr and blocks so a test can kill it.
const (
	CrashAtEnv   = crashpoint.AtEnv
	CrashModeEnv = crashpoint.ModeEnv
)

// CrashPoint is a point of a transaction where a crash is recovered.
type CrashPoint struct {
	Name string
	// Path says which transactions reach it.
	Path Path
	// KeepsNew: recovering from a crash here keeps the new version (the
	// crash came after it started); otherwise the old one runs again.
	KeepsNew bool
}

// Path is where a crash point lies.
type Path int

const (
	// OnInstall: every install of a good artifact passes it.
	OnInstall Path = iota
	// OnRollback: only an install whose new version fails its health gate.
	OnRollback
	// OnRecovery: only a start that replays an interrupted transaction.
	OnRecovery
)

// The crash points of the steps every transaction shares.
const (
	CPAdmitted      = "admitted"       // journal: admitted, what runs recorded
	CPDownloading   = "downloading"    // the first bytes arrived
	CPDownloaded    = "downloaded"     // journal: the artifact is staged
	CPVerified      = "verified"       // journal: hash and signature checked
	CPHealthy       = "healthy"        // journal: the health gate passed
	CPCommitted     = "committed"      // the journal is cleared
	CPRollbackBegin = "rollback-begin" // journal: a rollback starts
	CPQuarantined   = "quarantined"    // journal: the failed hash is quarantined
	CPRecoverBegin  = "recover-begin"  // a start begins replaying a transaction
)

// CrashPoints assembles a back-end's crash points in transaction order
// around the shared ones: its points up to the health gate (staging,
// activation), its commit points, its rollback points.
func CrashPoints(activate, commit, rollback []CrashPoint) []CrashPoint {
	out := []CrashPoint{{Name: CPAdmitted}, {Name: CPDownloading}, {Name: CPDownloaded}, {Name: CPVerified}}
	out = append(out, activate...)
	out = append(out, CrashPoint{Name: CPHealthy, KeepsNew: true})
	out = append(out, commit...)
	out = append(out, CrashPoint{Name: CPCommitted, KeepsNew: true}, CrashPoint{Name: CPRollbackBegin, Path: OnRollback})
	out = append(out, rollback...)
	return append(out, CrashPoint{Name: CPQuarantined, Path: OnRollback}, CrashPoint{Name: CPRecoverBegin, Path: OnRecovery, KeepsNew: true})
}

// Names lists crash point names.
func Names(cps []CrashPoint) []string {
	out := make([]string, len(cps))
	for i, cp := range cps {
		out[i] = cp.Name
	}
	return out
}
