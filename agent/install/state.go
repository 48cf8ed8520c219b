package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/myriarch/myriarch/agent/journal"
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

// quarantineEntry remembers a failed hash. Artifact faults (hash, signature,
// unpack, version check, health) block the hash until the server offers a
// different one; transient faults (network, disk) only delay a retry.
type quarantineEntry struct {
	Version    string    `json:"version"`
	Reason     string    `json:"reason"`
	Failed     time.Time `json:"failed"`
	Transient  bool      `json:"transient,omitempty"`
	RetryAfter time.Time `json:"retry_after,omitzero"`
	Count      int       `json:"count"`
}

func readJSON(path string, v any) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("install: read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("install: %s is corrupt: %w", path, err)
	}
	return true, nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("install: encode %s: %w", path, err)
	}
	return journal.WriteFile(path, append(data, '\n'), 0o600)
}

func (e *Engine) statePath(name string) string { return filepath.Join(e.o.StateDir, name) }

func (e *Engine) loadQuarantine() (map[string]quarantineEntry, error) {
	q := map[string]quarantineEntry{}
	_, err := readJSON(e.statePath(quarantineFile), &q)
	return q, err
}

// quarantine records a failed hash durably.
func (e *Engine) quarantine(hash, ver, reason string, transient bool) error {
	q, err := e.loadQuarantine()
	if err != nil {
		e.log.Warn("quarantine file unreadable, starting a new one", "err", err)
		q = map[string]quarantineEntry{}
	}
	ent := q[hash]
	ent.Version, ent.Reason, ent.Failed, ent.Transient = ver, reason, time.Now().UTC(), transient
	ent.Count++
	if transient {
		wait := e.o.RetryBackoff
		for i := 1; i < ent.Count && wait < time.Hour; i++ {
			wait *= 2
		}
		ent.RetryAfter = ent.Failed.Add(min(wait, time.Hour))
	} else {
		ent.RetryAfter = time.Time{}
	}
	q[hash] = ent
	// Bound the file: forget the oldest entries beyond 100.
	for len(q) > 100 {
		var oldest string
		for h, v := range q {
			if oldest == "" || v.Failed.Before(q[oldest].Failed) {
				oldest = h
			}
		}
		delete(q, oldest)
	}
	return writeJSON(e.statePath(quarantineFile), q)
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
