// Package fileremove removes directory trees where os.RemoveAll cannot:
// Wine 8 answers the deletion Go's RemoveAll uses on Windows
// (NtSetInformationFile with FileDispositionInformationEx) with "not
// implemented", which Go does not fall back from.
package fileremove

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Tree removes the tree at path: with os.RemoveAll, else one entry at a
// time, deepest first, with os.Remove (a link goes alone, never what it
// points at). It returns RemoveAll's error when the tree is still there.
func Tree(path string) error {
	err := os.RemoveAll(path)
	if err == nil {
		return nil
	}
	var paths []string
	filepath.WalkDir(path, func(p string, d fs.DirEntry, werr error) error {
		if werr != nil {
			return nil
		}
		paths = append(paths, p)
		if d.Type()&(fs.ModeSymlink|fs.ModeIrregular) != 0 && d.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	for i := len(paths) - 1; i >= 0; i-- {
		os.Remove(paths[i])
	}
	if _, lerr := os.Lstat(path); lerr == nil {
		return err
	}
	return nil
}
