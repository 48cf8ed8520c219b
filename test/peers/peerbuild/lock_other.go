//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package peerbuild

import (
	"errors"
	"os"
)

// tryLock is unsupported here: the peers are only built on Unix hosts.
func tryLock(*os.File) (bool, error) {
	return false, errors.ErrUnsupported
}
