// Package journal persists the install transaction so an updater killed at
// any instant (power loss included) can finish or undo it on the next start.
//
// Every write goes to a temporary file in the same directory, is fsync'ed,
// renamed over the target and the directory is fsync'ed: after a crash the
// file holds either the old or the new record, never a torn one.
package journal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// WriteFile atomically replaces path with data (temp file + fsync + rename
// + directory fsync).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return WriteFrom(path, bytes.NewReader(data), perm)
}

// WriteFrom is WriteFile streaming from r: path holds either what it held
// or all of r, never part of it, and is never missing (a binary replaced
// while it runs keeps running from its old inode). Temporary files are
// named "."+base+".*.tmp" in path's directory.
func WriteFrom(path string, r io.Reader, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("journal: create temp in %s: %w", dir, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = io.Copy(f, r); err != nil {
		return fmt.Errorf("journal: write %s: %w", tmp, err)
	}
	if err = f.Chmod(perm); err != nil && runtime.GOOS != "windows" {
		return fmt.Errorf("journal: chmod %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("journal: fsync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("journal: close %s: %w", tmp, err)
	}
	if err = retry(func() error { return os.Rename(tmp, path) }, true); err != nil {
		return fmt.Errorf("journal: rename %s: %w", path, err)
	}
	return SyncDir(dir)
}

// transientFor bounds the wait for another process that holds a state
// file for a moment (Windows; see transient).
const transientFor = 2 * time.Second

// retry runs op until it succeeds, fails for a reason that lasts, or
// transientFor has passed.
func retry(op func() error, renaming bool) error {
	deadline := time.Now().Add(transientFor)
	for {
		err := op()
		if err == nil || !transient(err, renaming) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ReadFile reads the state file at path, waiting (a bounded time) while
// another process holds it for a moment, as Windows makes a reader wait
// for a writer's rename over the file.
func ReadFile(path string) ([]byte, error) {
	var data []byte
	err := retry(func() (err error) {
		data, err = os.ReadFile(path)
		return err
	}, false)
	return data, err
}

// Remove deletes path (absent is fine) and fsyncs its directory.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: remove %s: %w", path, err)
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs a directory so renames and creations in it are durable.
// Windows cannot open directories for sync; NTFS journals metadata itself.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("journal: open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("journal: fsync dir %s: %w", dir, err)
	}
	return nil
}
