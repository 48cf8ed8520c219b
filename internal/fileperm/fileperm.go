// Package fileperm checks and tightens the permissions of files that hold
// secrets or state (databases, tokens, configuration): who besides the
// owner may read or change them. On systems without Unix permission bits
// (Windows, where ACLs decide) every check passes and nothing is changed.
package fileperm

import "io/fs"

// WritableByOthers reports whether users other than the owner may change
// the file (group or world write bit).
func WritableByOthers(fi fs.FileInfo) bool { return hasBits && fi.Mode().Perm()&0o022 != 0 }

// ReadableByOthers reports whether users other than the owner may read the
// file (group or world read bit).
func ReadableByOthers(fi fs.FileInfo) bool { return hasBits && fi.Mode().Perm()&0o044 != 0 }

// Tighten removes every permission bit of path outside perm (e.g. 0o700
// for a directory of the server's own, 0o600 for its files) and reports
// the mode it had when it changed it. A missing file is no error.
func Tighten(path string, perm fs.FileMode) (was fs.FileMode, changed bool, err error) {
	return tighten(path, perm)
}
