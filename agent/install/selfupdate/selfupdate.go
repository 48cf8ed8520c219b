// Package selfupdate replaces the running updater's own executable with a
// verified new binary (github.com/minio/selfupdate does the rename dance,
// including Windows, where a running .exe can be renamed but not deleted)
// and confirms or rolls back the replacement at the next start.
//
// The sequence is: the caller has downloaded and verified the new binary
// (same admission, download and signature checks as collector packages),
// Apply keeps the current executable as .<name>.myriarch-old next to it,
// records a pending marker (fsync'ed) and swaps the binary; the caller then
// exits so the service manager restarts it. At the next start Confirm
// compares the running version with the marker: equal means the update is
// done; anything else restores the saved binary (the caller exits again so
// the old one runs).
package selfupdate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	minio "github.com/minio/selfupdate"

	"github.com/myriarch/myriarch/agent/journal"
)

// Pending describes an applied, not yet confirmed self-update.
type Pending struct {
	From string `json:"from"`
	To   string `json:"to"`
	Hash string `json:"hash"` // hex SHA-256 of the new binary artifact
	// OfferHash is the offer's PackageAvailable.hash (hex), reported as
	// server_offered_hash; "" in markers written before it existed.
	OfferHash  string    `json:"offer_hash,omitempty"`
	Executable string    `json:"executable"`
	Backup     string    `json:"backup"`
	Applied    time.Time `json:"applied"`
}

// StatusHash is the hex server_offered_hash of a status about p: the offer
// hash, or the content hash when the marker has none (the server also
// accepts it together with the version).
func (p *Pending) StatusHash() string {
	if p.OfferHash != "" {
		return p.OfferHash
	}
	return p.Hash
}

// Outcome of Confirm.
type Outcome int

const (
	None       Outcome = iota // no self-update pending
	Confirmed                 // the new version runs
	RolledBack                // the new version did not come up: the old binary is back
)

// Result of Confirm.
type Result struct {
	Outcome Outcome
	Pending *Pending
	// Reason explains a roll-back.
	Reason string
}

// Updater replaces one executable.
type Updater struct {
	exe string
	dir string
}

// New returns an Updater for exe ("" = the running executable) keeping its
// state under stateDir/selfupdate.
func New(exe, stateDir string) (*Updater, error) {
	if exe == "" {
		p, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("selfupdate: %w", err)
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		exe = p
	}
	dir := filepath.Join(stateDir, "selfupdate")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("selfupdate: %w", err)
	}
	return &Updater{exe: exe, dir: dir}, nil
}

// Executable is the file being replaced.
func (u *Updater) Executable() string { return u.exe }

func (u *Updater) markerPath() string { return filepath.Join(u.dir, "pending.json") }

// Apply replaces the executable with newBinary (already verified by the
// caller) and records the pending update. On error the old executable is in
// place (or RollbackError-level trouble is reported in the error).
func (u *Updater) Apply(newBinary, from, to, hash, offerHash string) error {
	// Next to the executable: the old binary is moved there by rename,
	// which cannot cross file systems.
	backup := filepath.Join(filepath.Dir(u.exe), "."+filepath.Base(u.exe)+".myriarch-old")
	p := &Pending{From: from, To: to, Hash: hash, OfferHash: offerHash, Executable: u.exe, Backup: backup, Applied: time.Now().UTC()}
	if err := writePending(u.markerPath(), p); err != nil {
		return err
	}
	f, err := os.Open(newBinary)
	if err != nil {
		journal.Remove(u.markerPath())
		return fmt.Errorf("selfupdate: %w", err)
	}
	defer f.Close()
	st, _ := os.Stat(u.exe)
	mode := os.FileMode(0o755)
	if st != nil {
		mode = st.Mode().Perm()
	}
	// The old binary moves (rename, never copy) to backup: the running
	// process keeps its inode, and the backup is byte-identical.
	os.Remove(backup)
	err = minio.Apply(f, minio.Options{TargetPath: u.exe, TargetMode: mode, OldSavePath: backup})
	if err != nil {
		if rerr := minio.RollbackError(err); rerr != nil {
			return fmt.Errorf("selfupdate: apply failed and restoring the old binary failed too (%v): %w", rerr, err)
		}
		journal.Remove(u.markerPath())
		return fmt.Errorf("selfupdate: apply: %w", err)
	}
	return journal.SyncDir(filepath.Dir(u.exe))
}

// Confirm is called once at start with the running version.
func (u *Updater) Confirm(running string) (Result, error) {
	var p Pending
	data, err := os.ReadFile(u.markerPath())
	if errors.Is(err, os.ErrNotExist) {
		return Result{Outcome: None}, nil
	}
	if err == nil {
		err = jsonUnmarshal(data, &p)
	}
	if err != nil {
		journal.Remove(u.markerPath())
		return Result{}, fmt.Errorf("selfupdate: unreadable marker %s: %w", u.markerPath(), err)
	}
	if strings.TrimPrefix(running, "v") == strings.TrimPrefix(p.To, "v") {
		if err := journal.Remove(u.markerPath()); err != nil {
			return Result{}, err
		}
		return Result{Outcome: Confirmed, Pending: &p}, nil
	}
	reason := fmt.Sprintf("after the update the running updater reports version %q, expected %q", running, p.To)
	if _, err := os.Stat(p.Backup); err != nil {
		journal.Remove(u.markerPath())
		return Result{Outcome: RolledBack, Pending: &p, Reason: reason + "; no saved binary to restore"}, nil
	}
	if same, _ := sameContent(p.Backup, p.Executable); !same {
		b, err := os.ReadFile(p.Backup)
		if err != nil {
			return Result{}, fmt.Errorf("selfupdate: read backup: %w", err)
		}
		// OldSavePath empty: the failed binary is deleted (hidden on Windows).
		if err := minio.Apply(bytes.NewReader(b), minio.Options{TargetPath: p.Executable}); err != nil {
			return Result{}, fmt.Errorf("selfupdate: restore %s: %w", p.Backup, err)
		}
	}
	if err := journal.Remove(u.markerPath()); err != nil {
		return Result{}, err
	}
	return Result{Outcome: RolledBack, Pending: &p, Reason: reason}, nil
}

func sameContent(a, b string) (bool, error) {
	ha, err := fileHash(a)
	if err != nil {
		return false, err
	}
	hb, err := fileHash(b)
	if err != nil {
		return false, err
	}
	return ha == hb, nil
}

func fileHash(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
