package offers

import (
	"strings"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// SelfPackage is the package an updater installs itself from, and
// EventSelfUpdateRolledBack the agent event of one it rolled back.
const (
	SelfPackage               = "myriarch-updater"
	EventSelfUpdateRolledBack = "self_update_rolled_back"
	// refusedPrefix starts the error of an offer an updater's local policy
	// refused (agent/admission.ErrRefused).
	refusedPrefix = "offer refused by local policy"
)

// selfUpdateLocked notes, once per failure, an updater that reports its
// own package InstallFailed for a reason other than a refusal: a
// self-update it rolled back (the restored updater reports why). It is said where the report
// came in; a status sent again (after a reconnect, a restart of this
// server) with the same message is not said twice. Caller holds e.mu.
func (e *Engine) selfUpdateLocked(uid uuid.UUID, ps *protobufs.PackageStatuses) {
	st := ps.GetPackages()[SelfPackage]
	if st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed {
		return
	}
	why := st.GetErrorMessage()
	if strings.HasPrefix(why, refusedPrefix) {
		return // refused before anything was fetched: nothing was rolled back
	}
	msg := "self-update to " + selfTarget(st.GetAgentHasVersion(), st.GetServerOfferedVersion()) + " failed; the updater runs its previous version"
	if why != "" {
		msg += ": " + why
	}
	e.reg.AddEventOnce(uid, EventSelfUpdateRolledBack, msg)
}

// selfTarget names the version a self-update was to install.
func selfTarget(has, offered string) string {
	switch {
	case offered != "":
		return offered
	case has != "":
		return "a version after " + has
	}
	return "an unknown version"
}
