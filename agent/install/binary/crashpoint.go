package binary

import "github.com/myriarch/myriarch/agent/install"

// The back-end's own crash points (journal steps unless noted).
const (
	cpUnpacked          = "unpacked"
	cpVersionChecked    = "version-checked"
	cpActivating        = "activating"
	cpSupervisorStopped = "supervisor-stopped"
	cpLinkStaged        = "link-staged" // crash only: the new link exists under a temporary name
	cpSwitched          = "switched"    // crash only: current points at the new version
	cpSwitchRecorded    = "switch-recorded"
	cpSupervisorStarted = "supervisor-started"
	cpHealthGate        = "health-gate"
	cpInstalledRecorded = "installed-recorded" // crash only
	cpGarbageCollected  = "garbage-collected"  // crash only
	cpRollbackStopped   = "rollback-stopped"
	cpFailedLogKept     = "failed-log-kept"
	cpRollbackLinkStage = "rollback-link-staged" // crash only
	cpRollbackSwitched  = "rollback-switched"
	cpRollbackStarted   = "rollback-started"
	cpRollbackVerified  = "rollback-verified"
)

// CrashPoints lists every crash point of a collector-binary transaction, in
// order, with what recovery from each keeps.
var CrashPoints = install.CrashPoints(
	[]install.CrashPoint{
		{Name: cpUnpacked}, {Name: cpVersionChecked}, {Name: cpActivating}, {Name: cpSupervisorStopped}, {Name: cpLinkStaged},
		{Name: cpSwitched, KeepsNew: true}, {Name: cpSwitchRecorded, KeepsNew: true},
		{Name: cpSupervisorStarted, KeepsNew: true}, {Name: cpHealthGate, KeepsNew: true},
	},
	[]install.CrashPoint{{Name: cpInstalledRecorded, KeepsNew: true}, {Name: cpGarbageCollected, KeepsNew: true}},
	[]install.CrashPoint{
		{Name: cpRollbackStopped, Path: install.OnRollback}, {Name: cpFailedLogKept, Path: install.OnRollback},
		{Name: cpRollbackLinkStage, Path: install.OnRollback}, {Name: cpRollbackSwitched, Path: install.OnRollback},
		{Name: cpRollbackStarted, Path: install.OnRollback}, {Name: cpRollbackVerified, Path: install.OnRollback},
	},
)
