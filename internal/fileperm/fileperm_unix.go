//go:build unix

package fileperm

import (
	"errors"
	"io/fs"
	"os"
)

const hasBits = true

func tighten(path string, perm fs.FileMode) (fs.FileMode, bool, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	was := fi.Mode().Perm()
	if was&^perm == 0 {
		return was, false, nil
	}
	if err := os.Chmod(path, was&perm); err != nil {
		return was, false, err
	}
	return was, true, nil
}
