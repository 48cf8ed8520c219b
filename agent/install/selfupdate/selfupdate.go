// Package selfupdate is the install back-end for the updater itself (the
// TopLevel package "myriarch-updater"): it replaces the running updater's
// executable with a verified new binary and confirms or rolls back the
// replacement at the next start. On Unix the old binary is hard-linked to
// the backup and the new one renamed over the executable in one step, so
// the executable is never missing; on Windows, where a running .exe can be
// renamed but not overwritten, github.com/minio/selfupdate does the rename
// dance (replace_*.go).
//
// Its part of the transaction (agent/install runs the rest: admission,
// download, verification, journal, quarantine, statuses):
//
//	stage: unpack into state_dir/staging/self-<sha16> → `--version` check
//	activate: Apply keeps the executable as .<name>.myriarch-old next to it,
//	  records a pending marker (fsync'ed) and swaps the binary; the updater
//	  is asked to exit (RequestRestart) so the service manager starts the
//	  new binary
//	health gate (from that start, while the updater runs): the running
//	  updater reports the offered version and stays up StableFor; a binary
//	  started more than MaxStarts times without getting there (it crashes,
//	  the service manager restarts it) is rolled back
//	commit: the marker is removed
//	rollback: the saved binary is put back and the updater asked to exit
//	  again, so the old one runs
package selfupdate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/journal"
	"github.com/myriarch/myriarch/agent/statefile"
	"github.com/myriarch/myriarch/internal/filehash"
)

// Pending describes an applied, not yet confirmed self-update: the marker
// kept in state_dir/install.SelfUpdateMarkerFile.
type Pending = install.SelfUpdatePending

// Updater replaces one executable.
type Updater struct {
	exe    string
	marker string // the pending marker's path
}

// New returns an Updater for exe ("" = the running executable) keeping its
// marker in stateDir/install.SelfUpdateMarkerFile.
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
	marker := filepath.Join(stateDir, install.SelfUpdateMarkerFile)
	if err := os.MkdirAll(filepath.Dir(marker), 0o700); err != nil {
		return nil, fmt.Errorf("selfupdate: %w", err)
	}
	return &Updater{exe: exe, marker: marker}, nil
}

// Executable is the file being replaced.
func (u *Updater) Executable() string { return u.exe }

func (u *Updater) markerPath() string { return u.marker }

// backupPath is where Apply keeps the replaced binary: next to the
// executable, as it is moved there by rename, which cannot cross file
// systems.
func (u *Updater) backupPath() string {
	return filepath.Join(filepath.Dir(u.exe), "."+filepath.Base(u.exe)+".myriarch-old")
}

// HelperPath is the Sigstore verifier beside the executable
// (verify.SigstoreHelperName), which a self-update replaces with the
// updater when its package carries one.
func (u *Updater) HelperPath() string {
	return filepath.Join(filepath.Dir(u.exe), helperName())
}

func (u *Updater) helperBackupPath() string {
	return filepath.Join(filepath.Dir(u.exe), "."+filepath.Base(u.HelperPath())+".myriarch-old")
}

// Apply replaces the executable with newBinary (already verified by the
// caller), and the helper beside it with newHelper unless that is "", and
// records the pending update. On error the old executable and helper are
// in place and nothing is pending, unless the error says putting the
// executable back failed too (Windows); the marker then stays for the
// next start.
func (u *Updater) Apply(newBinary, newHelper, from, to, hash, offerHash string) error {
	backup := u.backupPath()
	p := &Pending{From: from, To: to, Hash: hash, OfferHash: offerHash, Executable: u.exe, Backup: backup, Applied: time.Now().UTC()}
	if newHelper != "" {
		p.Helper = u.HelperPath()
		if _, err := os.Stat(p.Helper); err == nil {
			p.HelperBackup = u.helperBackupPath()
		}
	}
	if err := statefile.Write(u.markerPath(), p); err != nil {
		return err
	}
	f, err := os.Open(newBinary)
	if err != nil {
		journal.Remove(u.markerPath())
		return fmt.Errorf("selfupdate: %w", err)
	}
	defer f.Close()
	if newHelper != "" {
		if err := replaceFile(newHelper, p.Helper, p.HelperBackup); err != nil {
			u.restoreHelper(p)
			journal.Remove(u.markerPath())
			return err
		}
	}
	// The old binary is kept as backup (see replaceExecutable, per OS).
	if changed, err := replaceExecutable(f, u.exe, backup, modeOf(u.exe)); err != nil {
		if !changed {
			u.restoreHelper(p)
			journal.Remove(u.markerPath()) // nothing to confirm or roll back
		}
		return err
	}
	return journal.SyncDir(filepath.Dir(u.exe))
}

// replaceFile puts src in place of dst, keeping the old dst as backup
// (when backup is not ""); dst may not exist yet.
func replaceFile(src, dst, backup string) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("selfupdate: %w", err)
	}
	defer f.Close()
	if backup == "" {
		if err := journal.WriteFrom(dst, f, 0o755); err != nil {
			return fmt.Errorf("selfupdate: install %s: %w", dst, err)
		}
		return nil
	}
	_, err = replaceExecutable(f, dst, backup, modeOf(dst))
	return err
}

func modeOf(path string) os.FileMode {
	if st, err := os.Stat(path); err == nil {
		return st.Mode().Perm()
	}
	return 0o755
}

// restoreHelper puts back the helper p replaced (or removes the one it
// added); the failed new one goes.
func (u *Updater) restoreHelper(p *Pending) error {
	switch {
	case p.Helper == "":
		return nil
	case p.HelperBackup == "":
		if err := os.Remove(p.Helper); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("selfupdate: remove %s: %w", p.Helper, err)
		}
		return nil
	}
	if _, err := os.Stat(p.HelperBackup); err != nil {
		return nil // never replaced, or already restored
	}
	if same, _ := sameContent(p.HelperBackup, p.Helper); same {
		return nil
	}
	if err := replaceFile(p.HelperBackup, p.Helper, ""); err != nil {
		return fmt.Errorf("selfupdate: restore %s: %w", p.Helper, err)
	}
	return nil
}

// Pending returns the applied, not yet confirmed update; nil when there is
// none. An unreadable marker is removed (and reported): it cannot be acted
// on.
func (u *Updater) Pending() (*Pending, error) {
	var p Pending
	ok, err := statefile.Read(u.markerPath(), &p)
	if err != nil {
		journal.Remove(u.markerPath())
		return nil, fmt.Errorf("selfupdate: unreadable marker: %w", err)
	}
	if !ok {
		return nil, nil
	}
	return &p, nil
}

// Restore puts the saved binary back in place of the executable, and the
// helper the pending update replaced (a no-op when they are already there
// or there is none) and reports whether there was a saved binary to go
// back to.
func (u *Updater) Restore() (bool, error) {
	if p, err := u.Pending(); err == nil && p != nil {
		if err := u.restoreHelper(p); err != nil {
			return true, err
		}
	}
	backup := u.backupPath()
	if _, err := os.Stat(backup); err != nil {
		return false, nil
	}
	if same, _ := sameContent(backup, u.exe); same {
		return true, nil
	}
	f, err := os.Open(backup)
	if err != nil {
		return true, fmt.Errorf("selfupdate: read backup: %w", err)
	}
	defer f.Close()
	mode := os.FileMode(0o755)
	if st, err := f.Stat(); err == nil {
		mode = st.Mode().Perm()
	}
	// No new backup: the failed binary goes.
	if _, err := replaceExecutable(f, u.exe, "", mode); err != nil {
		return true, fmt.Errorf("selfupdate: restore %s: %w", backup, err)
	}
	return true, journal.SyncDir(filepath.Dir(u.exe))
}

// CountStart records one more start of the new binary in the marker and
// returns the count (0 when nothing is pending).
func (u *Updater) CountStart() (int, error) {
	p, err := u.Pending()
	if err != nil || p == nil {
		return 0, err
	}
	p.Starts++
	return p.Starts, statefile.Write(u.markerPath(), p)
}

// Finish forgets the pending update (confirmed or rolled back).
func (u *Updater) Finish() error { return journal.Remove(u.markerPath()) }

func sameContent(a, b string) (bool, error) {
	ha, err := filehash.SHA256(a)
	if err != nil {
		return false, err
	}
	hb, err := filehash.SHA256(b)
	if err != nil {
		return false, err
	}
	return ha == hb, nil
}
