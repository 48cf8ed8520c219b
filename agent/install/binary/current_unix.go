//go:build !windows

package binary

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/myriarch/myriarch/agent/journal"
)

// switchCurrent atomically points <root>/current at versions/<dir>: a new
// relative symlink is created under a temporary name and renamed over the
// old one (rename(2) replaces it atomically), then the directory is fsync'ed.
// staged is called between the two (a crash point).
func switchCurrent(root, dir string, staged func()) error {
	cur := filepath.Join(root, "current")
	if st, err := os.Lstat(cur); err == nil && st.Mode()&os.ModeSymlink == 0 {
		return fmt.Errorf("%s is not a symlink: it must be managed by the updater", cur)
	}
	tmp := filepath.Join(root, ".current.tmp")
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("switch: %w", err)
	}
	if err := os.Symlink(filepath.Join("versions", dir), tmp); err != nil {
		return fmt.Errorf("switch: %w", err)
	}
	if err := journal.SyncDir(root); err != nil {
		return err
	}
	staged()
	if err := os.Rename(tmp, cur); err != nil {
		return fmt.Errorf("switch: %w", err)
	}
	return journal.SyncDir(root)
}

// readCurrent returns the version directory name <root>/current points at,
// "" when it does not exist.
func readCurrent(root string) (string, error) {
	cur := filepath.Join(root, "current")
	t, err := os.Readlink(cur)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", cur, err)
	}
	if !filepath.IsAbs(t) {
		t = filepath.Join(root, t)
	}
	rel, err := filepath.Rel(filepath.Join(root, "versions"), t)
	if err != nil || strings.Contains(rel, string(filepath.Separator)) || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("%s points at %s, outside %s/versions", cur, t, root)
	}
	return rel, nil
}

// cleanupCurrentTemp removes leftovers of an interrupted switch.
func cleanupCurrentTemp(root string) {
	os.Remove(filepath.Join(root, ".current.tmp"))
}
