package install

import (
	"encoding/hex"
	"slices"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/pkgstatus"
)

// setLocked replaces one package's status, filling in what runs.
func (e *Engine) setLocked(st *protobufs.PackageStatus) {
	if b := e.byName[st.Name]; b != nil && b.installed.Version != "" {
		st.AgentHasVersion = b.installed.Version
		st.AgentHasHash = unhex(b.installed.Hash)
	}
	e.statuses[st.Name] = st
}

func (e *Engine) refuseLocked(st *protobufs.PackageStatus, msg string) {
	st.Status = protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed
	st.ErrorMessage = msg
	e.setLocked(st)
}

// setStatus replaces one package's status and reports the whole set;
// persist saves it (terminal statuses), so it is reported again after a
// restart.
func (e *Engine) setStatus(st *protobufs.PackageStatus, persist bool) {
	e.mu.Lock()
	e.setLocked(st)
	e.mu.Unlock()
	e.publish(persist)
}

// publish sends the whole set of statuses and, with persist, saves it.
func (e *Engine) publish(persist bool) {
	e.pubMu.Lock()
	defer e.pubMu.Unlock()
	e.mu.Lock()
	s := pkgstatus.Snapshot(e.statuses, e.allHash)
	rep := e.rep
	e.mu.Unlock()
	pkgstatus.Publish(e.log, s, rep, e.statePath(e.o.StatePrefix+StatusesFile), persist)
}

// settleLocked makes the statuses loaded at start final: a status left in
// progress by a restart is Installed when what runs came from that offer
// and InstallFailed otherwise, and what runs gets an Installed status when
// no other result is about it.
func (e *Engine) settleLocked() {
	for name, st := range e.statuses {
		switch st.GetStatus() {
		case protobufs.PackageStatusEnum_PackageStatusEnum_Installed, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed:
			continue
		}
		if e.running != nil && e.running.b == e.byName[name] {
			continue // its gate runs live (LiveGater): still installing
		}
		st.DownloadDetails = nil
		if b := e.byName[name]; b != nil && b.installed.matches(hex.EncodeToString(st.GetServerOfferedHash())) {
			st.Status, st.ErrorMessage = protobufs.PackageStatusEnum_PackageStatusEnum_Installed, ""
		} else {
			st.Status = protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed
			st.ErrorMessage = "interrupted by an updater restart before it changed anything; offer again to retry"
		}
		e.setLocked(st)
	}
	for _, b := range e.order {
		in := b.installed
		if in.Version == "" || b.desc.ByVersion {
			continue
		}
		st := e.statuses[b.desc.Package]
		if st.GetStatus() == protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed {
			continue // the last result, about what runs or about a refused offer
		}
		// A persisted Installed status of this very content is kept: it
		// names the latest offer of it (a re-offer of installed content
		// under a new offer hash is Installed at once, so the installed
		// record keeps the first offer's hash).
		if st != nil && in.Hash != "" && st.GetServerOfferedVersion() == in.Version && slices.Equal(st.GetAgentHasHash(), unhex(in.Hash)) {
			continue
		}
		e.setLocked(&protobufs.PackageStatus{
			Name: b.desc.Package, Status: protobufs.PackageStatusEnum_PackageStatusEnum_Installed,
			ServerOfferedVersion: in.Version, ServerOfferedHash: unhex(in.statusHash()),
		})
	}
}
