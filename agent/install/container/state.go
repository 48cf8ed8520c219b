package container

import (
	"encoding/hex"
	"encoding/json"
	"path/filepath"

	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/container"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/journal"
	"github.com/myriarch/myriarch/agent/statefile"
)

// Files under state_dir.
const (
	InstalledFile = StatePrefix + "installed.json"
	swapFile      = StatePrefix + "swap.json"
)

// Layout is where container mode keeps its install state under state_dir.
func Layout() install.Layout { return install.Layout{Prefix: StatePrefix, Installed: InstalledFile} }

// ImageInfo describes the image the collector container runs
// (container-installed.json).
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
	// image was found running, not installed by the updater.
	Hash string `json:"hash,omitempty"`
	// OfferHash is the PackageAvailable.hash (hex) of the offer that
	// installed it; "" in records written before it existed.
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

// swapState is what recovery needs beyond the journal record
// (container-swap.json).
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

// swap is the transaction under way: its persisted state and what the
// steps before creation learnt.
type swap struct {
	sw  swapState
	src source
	// The old container as the engine reported it (set by Prepare).
	old     container.InspectResponse
	oldCfg  json.RawMessage
	oldHost json.RawMessage
	oldImg  *dockerspec.DockerOCIImageConfig
	pulled  *ImageInfo // set by Fetch
}

func (b *Backend) statePath(name string) string { return filepath.Join(b.env.StateDir, name) }

func (b *Backend) saveSwap(s *swap) error {
	if err := statefile.Write(b.statePath(swapFile), s.sw); err != nil {
		return install.Failf(install.Transient, "state: %w", err)
	}
	return nil
}

// swapFor returns the state of t's swap: in memory while it runs, from
// container-swap.json after a restart. The file is written before any
// container changes; without it nothing was touched.
func (b *Backend) swapFor(t *install.Txn) *swap {
	rec := t.Record()
	if b.cur != nil && b.cur.sw.TxnID == rec.ID {
		return b.cur
	}
	s := &swap{sw: swapState{TxnID: rec.ID, OldID: rec.PrevDir, OldRunning: true, NewID: rec.NewDir}}
	var saved swapState
	if ok, err := statefile.Read(b.statePath(swapFile), &saved); err != nil {
		b.log.Warn("swap state unreadable; recovering from the journal alone", "err", err)
	} else if ok && saved.TxnID == rec.ID {
		s.sw = saved
	}
	b.cur = s
	return s
}

// endSwap forgets the swap once its transaction is over.
func (b *Backend) endSwap() {
	b.cur = nil
	if err := journal.Remove(b.statePath(swapFile)); err != nil {
		b.log.Warn("removing the swap state", "err", err)
	}
}
