package install

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/myriarch/myriarch/agent/journal"
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

func (e *Engine) saveStatuses(s *protobufs.PackageStatuses) error {
	data, err := protojson.Marshal(s)
	if err != nil {
		return err
	}
	return journal.WriteFile(e.statePath(statusesFile), data, 0o600)
}

// LastStatuses returns the statuses last persisted (terminal statuses are
// persisted; progress is not), nil when there are none.
func (e *Engine) LastStatuses() (*protobufs.PackageStatuses, error) {
	data, err := os.ReadFile(e.statePath(statusesFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s protobufs.PackageStatuses
	if err := protojson.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("install: %s is corrupt: %w", e.statePath(statusesFile), err)
	}
	return &s, nil
}
