package install

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/journal"
	"github.com/myriarch/myriarch/agent/pkgstatus"
	"github.com/myriarch/myriarch/agent/quarantine"
)

// Files and directories under state_dir (the quarantine, statuses and
// confirmed versions files get Options.StatePrefix; the confirmed
// versions file is confirmed.File). Layout and ReadStatus name the rest.
const (
	JournalFile    = journal.File
	QuarantineFile = "quarantine.json"
	StatusesFile   = "package-statuses.json"
	StagingDir     = "staging"
)

func (e *Engine) statePath(name string) string { return filepath.Join(e.o.StateDir, name) }

// quarantineStore is the engine's quarantine file. Built per use: it holds
// no state, and tests change RetryBackoff on a live engine.
func (e *Engine) quarantineStore() *quarantine.Store {
	return quarantine.New(e.statePath(e.o.StatePrefix+QuarantineFile), e.o.RetryBackoff, e.log)
}

// quarantine records a failed hash durably; a failure to do so is logged.
func (e *Engine) quarantine(t *Txn, reason string, f Fault) {
	if f == Refused {
		return
	}
	if err := e.quarantineStore().Record(t.rec.Hash, t.rec.Version, reason, f == Transient); err != nil {
		t.log.Error("quarantine not recorded", "err", err)
	}
}

// stagingPath is where the engine downloads a transaction's artifact.
func (e *Engine) stagingPath(hash string) string {
	return filepath.Join(e.o.StateDir, StagingDir, hash[:min(16, len(hash))]+".download")
}

// cleanStaging empties staging/ (nothing is in flight).
func (e *Engine) cleanStaging() {
	dir := filepath.Join(e.o.StateDir, StagingDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, ent := range ents {
		if err := os.RemoveAll(filepath.Join(dir, ent.Name())); err != nil {
			e.log.Warn("cleaning the staging directory", "err", err)
		}
	}
}

// LastStatuses returns the statuses last persisted (terminal statuses and
// InstallPending are persisted; progress is not), nil when there are none.
func (e *Engine) LastStatuses() (*protobufs.PackageStatuses, error) {
	s, err := pkgstatus.Load(e.statePath(e.o.StatePrefix + StatusesFile))
	var corrupt *pkgstatus.CorruptError
	if errors.As(err, &corrupt) {
		return nil, fmt.Errorf("install: %w", err)
	}
	return s, err
}
