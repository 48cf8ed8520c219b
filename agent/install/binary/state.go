package binary

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/journal"
	"github.com/myriarch/myriarch/agent/statefile"
)

// Files under state_dir.
const (
	InstalledFile = "collector-installed.json"
	failedDir     = "failed"
)

// Layout is where binary mode keeps its install state under state_dir.
func Layout() install.Layout { return install.Layout{Installed: InstalledFile} }

// installed is what the back-end last committed (collector-installed.json).
type installed struct {
	Version string `json:"version"`
	Hash    string `json:"hash"` // hex; "" when the version was found, not installed by the updater
	Dir     string `json:"dir"`  // version directory name under <root>/versions
	// OfferHash is the PackageAvailable.hash (hex) of the offer that
	// installed it; records written before it existed have none.
	OfferHash string `json:"offer_hash,omitempty"`
}

func readInstalled(stateDir string) (*installed, error) {
	var in installed
	ok, err := statefile.Read(filepath.Join(stateDir, InstalledFile), &in)
	if err != nil || !ok {
		return nil, err
	}
	return &in, nil
}

func writeInstalled(stateDir string, in *installed) error {
	return statefile.Write(filepath.Join(stateDir, InstalledFile), in)
}

// keepFailedLog copies the supervisor's agent.log (the failed collector's
// output, truncated at the next collector start) to
// state_dir/failed/<version>/, once; an empty one gives way to the tail the
// health gate read when the last collector process ended.
func (b *Backend) keepFailedLog(rec *journal.Record) {
	dir := filepath.Join(b.env.StateDir, failedDir, rec.Version)
	dst := filepath.Join(dir, "agent.log")
	if _, err := os.Stat(dst); err == nil {
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.log.Warn("keeping the failed collector log", "err", err)
		return
	}
	reason := fmt.Sprintf("version %s (sha256 %s) rolled back at %s: %s\n", rec.Version, rec.Hash, time.Now().UTC().Format(time.RFC3339), rec.Reason)
	if err := os.WriteFile(filepath.Join(dir, "reason.txt"), []byte(reason), 0o600); err != nil {
		b.log.Warn("keeping the failed collector log", "err", err)
	}
	src, err := os.Open(filepath.Join(b.o.StorageDir, "agent.log"))
	if err != nil {
		b.log.Warn("no collector log to keep", "err", err)
		return
	}
	defer src.Close()
	// Keep at most the last 16 MiB.
	if st, err := src.Stat(); err == nil && st.Size() > 16<<20 {
		if _, err := src.Seek(st.Size()-16<<20, io.SeekStart); err != nil {
			b.log.Warn("keeping the failed collector log", "err", err)
			return
		}
	}
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		b.log.Warn("keeping the failed collector log", "err", err)
		return
	}
	n, cerr := io.Copy(out, src)
	if cerr == nil && n == 0 && len(b.crashLog) > 0 {
		// Stopped just after a restart truncated it: what the gate read
		// when the last collector process ended.
		_, cerr = out.Write(b.crashLog)
	}
	b.crashLog = nil
	serr := out.Sync()
	out.Close()
	if cerr != nil || serr != nil {
		b.log.Warn("keeping the failed collector log", "err", errors.Join(cerr, serr))
		os.Remove(tmp)
		return
	}
	if err := os.Rename(tmp, dst); err != nil {
		b.log.Warn("keeping the failed collector log", "err", err)
		return
	}
	if err := journal.SyncDir(dir); err != nil {
		b.log.Warn("keeping the failed collector log", "err", err)
	}
}

// gc keeps the current and previous version directories and removes every
// other one (and interrupted unpacks).
func (b *Backend) gc(keep ...string) {
	vdir := filepath.Join(b.o.Root, "versions")
	entries, err := os.ReadDir(vdir)
	if err != nil {
		return
	}
	for _, ent := range entries {
		name := ent.Name()
		if contains(keep, name) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(vdir, name)); err != nil {
			b.log.Warn("garbage collection", "dir", name, "err", err)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v != "" && v == s {
			return true
		}
	}
	return false
}
