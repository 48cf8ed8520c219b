package install

import (
	"errors"
	"path/filepath"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/journal"
	"github.com/myriarch/myriarch/agent/pkgstatus"
	"github.com/myriarch/myriarch/agent/statefile"
)

// Status is what a state dir records about installs (ReadStatus). Every
// field is nil when its file does not exist.
type Status struct {
	// InProgress is the unfinished transaction (JournalFile).
	InProgress *journal.Record
	// SelfUpdate is the applied, unconfirmed self-update (SelfUpdateMarkerFile).
	SelfUpdate *SelfUpdatePending
	// Installed is the back-end's record of what it installed (Layout.Installed).
	Installed *InstalledRecord
	// Statuses are the last persisted package statuses (Layout.StatusesFile).
	Statuses *protobufs.PackageStatuses
}

// InstalledRecord holds the fields the back-ends' installed records share.
type InstalledRecord struct {
	Version string `json:"version"`
	// Hash is the content hash (hex) it was installed from, "" when it was
	// found running, not installed by the updater.
	Hash string `json:"hash"`
	// Ref and Digest are the image reference and digest, for back-ends
	// that install images.
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
}

// ReadStatus reads the state files the engine and its back-ends write under
// stateDir, the back-end's own ones named by l. It only reads: no lock, nothing
// created, so it is safe while the updater runs. A file that cannot be read
// or decoded leaves its field nil and adds an error naming the file; the
// errors are joined.
func ReadStatus(stateDir string, l Layout) (*Status, error) {
	var (
		st   Status
		errs []error
	)
	read := func(name string, v any) bool {
		ok, err := statefile.Read(filepath.Join(stateDir, name), v)
		if err != nil {
			errs = append(errs, err)
		}
		return ok
	}
	var rec journal.Record
	if read(JournalFile, &rec) {
		st.InProgress = &rec
	}
	var p SelfUpdatePending
	if read(SelfUpdateMarkerFile, &p) {
		st.SelfUpdate = &p
	}
	if l.Installed != "" {
		var in InstalledRecord
		if read(l.Installed, &in) {
			st.Installed = &in
		}
	}
	s, err := pkgstatus.Load(filepath.Join(stateDir, l.StatusesFile()))
	if err != nil {
		errs = append(errs, err)
	}
	st.Statuses = s
	return &st, errors.Join(errs...)
}
