//go:build !windows

package journal

// transient is false off Windows: a rename replaces a file others hold
// open, and an open never waits for a rename.
func transient(error, bool) bool { return false }
