package estate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Every file of the estate is opened through an os.Root of the estate
// directory: a symbolic link may point elsewhere inside the estate, never
// out of it (a link to /etc must not make the server read, hash or serve
// /etc). Only regular files are read: a FIFO or a device would block a
// load or never end.

// ErrOutsideEstate is a file that resolves outside the estate directory.
var ErrOutsideEstate = errors.New("resolves outside the estate")

// ErrNotRegular is an estate file that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// OpenFile opens the regular file rel (slash or OS separators, relative to
// dir) inside the estate dir, never following a link out of it.
func OpenFile(dir, rel string) (*os.File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return openIn(root, dir, rel)
}

// openIn opens rel in root (the estate dir) as a regular file.
func openIn(root *os.Root, dir, rel string) (*os.File, error) {
	rel = filepath.Clean(filepath.FromSlash(rel))
	if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("%s: %w", rel, ErrOutsideEstate)
	}
	f, err := root.OpenFile(rel, openFlags, 0)
	if err != nil {
		if outside(dir, rel) {
			return nil, fmt.Errorf("%s: %w", filepath.ToSlash(rel), ErrOutsideEstate)
		}
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w", filepath.ToSlash(rel), ErrNotRegular)
	}
	return f, nil
}

// outside reports whether rel, links resolved, leaves dir.
func outside(dir, rel string) bool {
	base, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	p, err := filepath.EvalSymlinks(filepath.Join(dir, rel))
	if err != nil {
		// A dangling link: resolve what it names, lexically.
		p, err = resolveLink(filepath.Join(dir, rel))
		if err != nil {
			return false
		}
	}
	r, err := filepath.Rel(base, p)
	return err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r)
}

// resolveLink follows the last element of p when it is a link, without
// requiring its target to exist.
func resolveLink(p string) (string, error) {
	t, err := os.Readlink(p)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(t) {
		t = filepath.Join(filepath.Dir(p), t)
	}
	return filepath.Clean(t), nil
}

// readFile reads an estate file (a path under the estate directory)
// through the load's root, at most MaxFileBytes.
func (ps *problems) readFile(path string) ([]byte, error) {
	rel, err := filepath.Rel(ps.root, path)
	if err != nil {
		return nil, err
	}
	f, err := openIn(ps.fs, ps.root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("larger than %d MiB, the limit for an estate file", MaxFileBytes>>20)
	}
	return data, nil
}
