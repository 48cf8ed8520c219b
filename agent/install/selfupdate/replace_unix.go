//go:build !windows

package selfupdate

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/myriarch/myriarch/agent/journal"
)

// replaceExecutable puts r's content in place of exe with one rename, so
// exe is never missing, not even for an instant a power loss could catch.
// With backup set, the old binary is first hard-linked there (its very
// inode: byte-identical, nothing copied; a copy where the file system has
// no hard links). On error, changed reports whether exe may no longer be
// the old binary.
func replaceExecutable(r io.Reader, exe, backup string, mode os.FileMode) (changed bool, err error) {
	old, err := os.Stat(exe)
	if err != nil {
		return false, fmt.Errorf("selfupdate: %w", err)
	}
	if backup != "" {
		if err := os.Remove(backup); err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, fmt.Errorf("selfupdate: remove old backup: %w", err)
		}
		if err := os.Link(exe, backup); err != nil {
			if err := copyFile(exe, backup, mode); err != nil {
				return false, err
			}
		}
	}
	if err := journal.WriteFrom(exe, r, mode); err != nil {
		now, serr := os.Stat(exe)
		return serr != nil || !os.SameFile(old, now), fmt.Errorf("selfupdate: replace %s: %w", exe, err)
	}
	return true, nil
}

// copyFile copies src to dst (fsync'ed, atomically named).
func copyFile(src, dst string, mode os.FileMode) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("selfupdate: back up %s: %w", src, err)
	}
	defer f.Close()
	if err := journal.WriteFrom(dst, f, mode); err != nil {
		return fmt.Errorf("selfupdate: back up %s: %w", src, err)
	}
	return nil
}
