package binary

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/pkgstatus"
	"github.com/myriarch/myriarch/agent/quarantine"
	"github.com/myriarch/myriarch/agent/statefile"
)

// Files under state_dir.
const (
	installedFile  = "collector-installed.json"
	quarantineFile = "quarantine.json"
	statusesFile   = "package-statuses.json"
	stagingDir     = "staging"
	failedDir      = "failed"
)

// installed is what the engine last committed for the collector.
type installed struct {
	Version string `json:"version"`
	Hash    string `json:"hash"` // hex; "" when the version was found, not installed by us
	Dir     string `json:"dir"`  // version directory name under <root>/versions
	// OfferHash is the PackageAvailable.hash (hex) of the offer that
	// installed it: what statuses report as server_offered_hash. Records
	// written before it existed have none; statusHash falls back to Hash.
	OfferHash string `json:"offer_hash,omitempty"`
}

// statusHash is the hex server_offered_hash of a status about in: the offer
// hash, or the content hash (which the server also accepts with the
// version) when the record has no offer hash.
func (in *installed) statusHash() string {
	if in.OfferHash != "" {
		return in.OfferHash
	}
	return in.Hash
}

func readJSON(path string, v any) (bool, error) {
	ok, err := statefile.Read(path, v)
	if err != nil {
		return false, fmt.Errorf("install: %w", err)
	}
	return ok, nil
}

func writeJSON(path string, v any) error {
	if err := statefile.Write(path, v); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	return nil
}

func (e *Engine) statePath(name string) string { return filepath.Join(e.o.StateDir, name) }

// quarantineStore is the engine's quarantine file. Built per use: it is
// stateless, and tests change RetryBackoff on a live engine.
func (e *Engine) quarantineStore() *quarantine.Store {
	return quarantine.New(e.statePath(quarantineFile), e.o.RetryBackoff, e.log)
}

// quarantine records a failed hash durably.
func (e *Engine) quarantine(hash, ver, reason string, transient bool) error {
	return e.quarantineStore().Record(hash, ver, reason, transient)
}

func (e *Engine) loadInstalled() (*installed, error) {
	var in installed
	ok, err := readJSON(e.statePath(installedFile), &in)
	if err != nil || !ok {
		return nil, err
	}
	return &in, nil
}

// LastStatuses returns the statuses last persisted (terminal statuses are
// persisted; progress is not), nil when there are none.
func (e *Engine) LastStatuses() (*protobufs.PackageStatuses, error) {
	s, err := pkgstatus.Load(e.statePath(statusesFile))
	var corrupt *pkgstatus.CorruptError
	if errors.As(err, &corrupt) {
		return nil, fmt.Errorf("install: %w", err)
	}
	return s, err
}
