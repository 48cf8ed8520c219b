package container

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/myriarch/myriarch/agent/journal"
)

// Files under state_dir. Container mode keeps its own names so a host that
// switched modes never mixes binary-mode state with container state.
const (
	installedFile  = "container-installed.json"
	quarantineFile = "container-quarantine.json"
	statusesFile   = "container-package-statuses.json"
	swapFile       = "container-swap.json"
	stagingDir     = "staging"
)

// ImageInfo describes the image the collector container runs.
type ImageInfo struct {
	// Version is the image's org.opencontainers.image.version label.
	Version string `json:"version"`
	// Digest is the registry manifest digest ("sha256:…") for pulled images,
	// "" for images loaded from a tarball (they have no manifest digest).
	Digest string `json:"digest,omitempty"`
	// ID is the image ID (config digest, "sha256:…").
	ID string `json:"id"`
	// Ref is what the container's Config.Image names.
	Ref string `json:"ref"`
	// Hash is the offered content_hash (hex) that installed it, "" when the
	// image was found running, not installed by us.
	Hash string `json:"hash,omitempty"`
}

// swapState is what recovery needs beyond the journal record.
type swapState struct {
	TxnID      string `json:"txn_id"`
	OldID      string `json:"old_id"`
	OldRunning bool   `json:"old_running"`
	// OldRestart is the old container's restart policy: it is set to "no"
	// while the old container is kept stopped (so a daemon restart cannot
	// start it next to the new one) and restored by a rollback.
	OldRestart  container.RestartPolicy `json:"old_restart"`
	NewID       string                  `json:"new_id,omitempty"`
	Image       ImageInfo               `json:"image"`
	InstanceUID string                  `json:"instance_uid,omitempty"`
}

// quarantineEntry remembers a failed hash. Artifact faults block the hash
// until the server offers a different one; transient faults delay a retry.
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
		return false, fmt.Errorf("container: read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("container: %s is corrupt: %w", path, err)
	}
	return true, nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("container: encode %s: %w", path, err)
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
	ent.RetryAfter = time.Time{}
	if transient {
		wait := e.o.RetryBackoff
		for i := 1; i < ent.Count && wait < time.Hour; i++ {
			wait *= 2
		}
		ent.RetryAfter = ent.Failed.Add(min(wait, time.Hour))
	}
	q[hash] = ent
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

func (e *Engine) saveStatuses(s *protobufs.PackageStatuses) error {
	data, err := protojson.Marshal(s)
	if err != nil {
		return err
	}
	return journal.WriteFile(e.statePath(statusesFile), data, 0o600)
}

// LastStatuses returns the statuses last persisted (terminal statuses are
// persisted, progress is not), nil when there are none.
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
		return nil, fmt.Errorf("container: %s is corrupt: %w", e.statePath(statusesFile), err)
	}
	return &s, nil
}
