//go:build !windows

package sitesetup

import "os"

// protect makes path readable by its owner only (the 0600 of install.sh).
func protect(path string) error { return os.Chmod(path, 0o600) }

// protected says whether only path's owner may read it.
func protected(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().Perm()&0o077 == 0
}
