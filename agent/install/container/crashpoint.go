package container

import "github.com/myriarch/myriarch/agent/install"

// The back-end's own crash points (journal steps).
const (
	cpImageReady   = "image-ready"
	cpCreating     = "creating-next"
	cpCreated      = "next-created"
	cpOldStopped   = "old-stopped"
	cpNextStarted  = "next-started"
	cpOldRemoved   = "old-removed"
	cpRenamed      = "renamed"
	cpNextRemoved  = "rollback-next-removed"
	cpOldRestarted = "rollback-old-started"
)

// CrashPoints lists every crash point of a container swap, in order, with
// what recovery from each keeps.
var CrashPoints = install.CrashPoints(
	[]install.CrashPoint{{Name: cpImageReady}, {Name: cpCreating}, {Name: cpCreated}, {Name: cpOldStopped},
		{Name: cpNextStarted, KeepsNew: true}},
	[]install.CrashPoint{{Name: cpOldRemoved, KeepsNew: true}, {Name: cpRenamed, KeepsNew: true}},
	[]install.CrashPoint{{Name: cpNextRemoved, Path: install.OnRollback}, {Name: cpOldRestarted, Path: install.OnRollback}},
)
