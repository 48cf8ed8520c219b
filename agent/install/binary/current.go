package binary

// SwitchCurrent points <root>/current at <root>/versions/<dir> the way an
// install switches it (a symbolic link renamed over the old one; on
// Windows a directory junction), for the site setup's first version.
func SwitchCurrent(root, dir string) error { return switchCurrent(root, dir, func() {}) }

// ReadCurrent is the version directory <root>/current points at, "" when
// there is none, after finishing a switch a crash interrupted.
func ReadCurrent(root string) (string, error) { return readCurrent(root) }
