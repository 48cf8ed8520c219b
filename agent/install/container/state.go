package container

import (
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/moby/moby/api/types/container"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/pkgstatus"
	"github.com/myriarch/myriarch/agent/quarantine"
	"github.com/myriarch/myriarch/agent/statefile"
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
	// OfferHash is the PackageAvailable.hash (hex) of the offer that
	// installed it; "" in records written before it existed (statusHash
	// then falls back to Hash).
	OfferHash string `json:"offer_hash,omitempty"`
}

// matchesOffered reports whether a status's server_offered_hash names the
// offer that installed this image: its offer hash, or its content hash (what
// older updaters reported, and what a record without offer_hash gives).
func (i *ImageInfo) matchesOffered(offered []byte) bool {
	if i.Hash == "" || len(offered) == 0 {
		return false
	}
	h := hex.EncodeToString(offered)
	return h == i.Hash || h == i.OfferHash
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

func readJSON(path string, v any) (bool, error) {
	ok, err := statefile.Read(path, v)
	if err != nil {
		return false, fmt.Errorf("container: %w", err)
	}
	return ok, nil
}

func writeJSON(path string, v any) error {
	if err := statefile.Write(path, v); err != nil {
		return fmt.Errorf("container: %w", err)
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

// LastStatuses returns the statuses last persisted (terminal statuses are
// persisted, progress is not), nil when there are none.
func (e *Engine) LastStatuses() (*protobufs.PackageStatuses, error) {
	s, err := pkgstatus.Load(e.statePath(statusesFile))
	var corrupt *pkgstatus.CorruptError
	if errors.As(err, &corrupt) {
		return nil, fmt.Errorf("container: %w", err)
	}
	return s, err
}
