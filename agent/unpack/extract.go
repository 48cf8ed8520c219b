package unpack

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

type extractor struct {
	root    string
	o       Options
	total   int64
	entries int
	seen    map[string]bool
}

// cleanName validates an archive entry name and returns it slash-cleaned,
// or "" for the archive root itself.
func cleanName(name string) (string, error) {
	if name == "" || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("%w: %q", ErrUnsafePath, name)
	}
	n := strings.ReplaceAll(name, `\`, "/")
	if strings.HasPrefix(n, "/") || (len(n) >= 2 && n[1] == ':') {
		return "", fmt.Errorf("%w: absolute path %q", ErrUnsafePath, name)
	}
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: %q climbs out with ..", ErrUnsafePath, name)
		}
	}
	n = path.Clean(n)
	if n == "." {
		return "", nil
	}
	return n, nil
}

func (x *extractor) count() error {
	x.entries++
	if x.entries > x.o.MaxEntries {
		return fmt.Errorf("%w: more than %d entries", ErrTooLarge, x.o.MaxEntries)
	}
	return nil
}

func (x *extractor) dir(name string) error {
	n, err := cleanName(name)
	if err != nil || n == "" {
		return err
	}
	if err := os.MkdirAll(filepath.Join(x.root, filepath.FromSlash(n)), 0o755); err != nil {
		return fmt.Errorf("mkdir %q: %w", name, err)
	}
	return nil
}

// file writes one regular file; size is the announced size or -1.
func (x *extractor) file(name string, mode fs.FileMode, r io.Reader, size int64) error {
	n, err := cleanName(name)
	if err != nil {
		return err
	}
	if n == "" {
		return fmt.Errorf("%w: file entry %q names the root", ErrUnsafePath, name)
	}
	if x.seen[n] {
		return fmt.Errorf("%w: %q", ErrDuplicate, name)
	}
	x.seen[n] = true
	if size > x.o.MaxEntrySize {
		return fmt.Errorf("%w: %q announces %d bytes, cap %d", ErrEntryTooLarge, name, size, x.o.MaxEntrySize)
	}
	p := filepath.Join(x.root, filepath.FromSlash(n))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("mkdir for %q: %w", name, err)
	}
	// Only permission bits survive: no setuid/setgid/sticky from an archive.
	perm := (mode.Perm() & 0o755) | 0o600
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return fmt.Errorf("create %q: %w", name, err)
	}
	defer f.Close()
	limit := min(x.o.MaxEntrySize, x.o.MaxTotalSize-x.total)
	written, err := io.Copy(f, io.LimitReader(r, limit+1))
	if err != nil {
		return fmt.Errorf("write %q: %w", name, err)
	}
	if written > x.o.MaxEntrySize {
		return fmt.Errorf("%w: %q is over %d bytes", ErrEntryTooLarge, name, x.o.MaxEntrySize)
	}
	x.total += written
	if x.total > x.o.MaxTotalSize {
		return fmt.Errorf("%w: over %d bytes in total", ErrTooLarge, x.o.MaxTotalSize)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %q: %w", name, err)
	}
	return f.Close()
}

func (x *extractor) tarGz(r io.Reader) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("gzip: %w", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tar: %w", err)
		}
		if err := x.count(); err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeRegA:
			if err := x.file(h.Name, fs.FileMode(h.Mode), tr, h.Size); err != nil {
				return err
			}
		case tar.TypeDir:
			if err := x.dir(h.Name); err != nil {
				return err
			}
		case tar.TypeSymlink, tar.TypeLink:
			return fmt.Errorf("%w: %q -> %q", ErrLink, h.Name, h.Linkname)
		case tar.TypeXGlobalHeader:
			// PAX global metadata, no file.
		default:
			return fmt.Errorf("%w: %q (tar type %q)", ErrSpecialFile, h.Name, h.Typeflag)
		}
	}
}

func (x *extractor) zip(r io.ReaderAt, size int64) error {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return fmt.Errorf("zip: %w", err)
	}
	for _, f := range zr.File {
		if err := x.count(); err != nil {
			return err
		}
		m := f.Mode()
		switch {
		case m&fs.ModeSymlink != 0:
			return fmt.Errorf("%w: %q is a symlink", ErrLink, f.Name)
		case m.IsDir() || strings.HasSuffix(f.Name, "/"):
			if err := x.dir(f.Name); err != nil {
				return err
			}
		case m.IsRegular():
			if f.UncompressedSize64 > uint64(x.o.MaxEntrySize) {
				return fmt.Errorf("%w: %q announces %d bytes, cap %d", ErrEntryTooLarge, f.Name, f.UncompressedSize64, x.o.MaxEntrySize)
			}
			rc, err := f.Open()
			if err != nil {
				return fmt.Errorf("zip %q: %w", f.Name, err)
			}
			err = x.file(f.Name, m, rc, -1)
			rc.Close()
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: %q (mode %v)", ErrSpecialFile, f.Name, m)
		}
	}
	return nil
}
