//go:build !(linux || darwin || freebsd || netbsd || openbsd || windows)

package download

import "errors"

func freeSpace(string) (uint64, error) { return 0, errors.ErrUnsupported }
