// Package unpack turns a verified artifact into a version directory:
// a tar.gz or zip archive, or a bare executable, recognised by its magic
// bytes (never by the URL or a server-supplied name).
//
// Archives are hostile until proven otherwise: absolute paths, `..`
// components, symbolic and hard links, devices, FIFOs and entries larger
// than the cap are refused (the whole unpack fails, nothing is activated).
// Everything is written into `<parent>/<name>.tmp`, every file and
// directory is fsync'ed, the configured executable must be present, and
// only then is the directory renamed to `<parent>/<name>`: a crash leaves
// either no version directory or a complete one.
package unpack

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/myriarch/myriarch/agent/journal"
)

var (
	ErrUnknownFormat     = errors.New("unrecognised artifact format")
	ErrUnsafePath        = errors.New("unsafe path in archive")
	ErrLink              = errors.New("links are not allowed in archives")
	ErrSpecialFile       = errors.New("special files are not allowed in archives")
	ErrEntryTooLarge     = errors.New("archive entry too large")
	ErrTooLarge          = errors.New("unpacked content too large")
	ErrMissingExecutable = errors.New("executable not found in artifact")
	ErrDuplicate         = errors.New("duplicate archive entry")
)

// Format is an artifact container format.
type Format int

const (
	Raw Format = iota + 1 // a bare executable (ELF, PE, Mach-O)
	TarGz
	Zip
)

func (f Format) String() string {
	switch f {
	case Raw:
		return "raw executable"
	case TarGz:
		return "tar.gz"
	case Zip:
		return "zip"
	}
	return "unknown"
}

// Detect recognises the format from the first bytes of the artifact.
func Detect(head []byte) (Format, error) {
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return TarGz, nil
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return Zip, nil
	case bytes.HasPrefix(head, []byte("\x7fELF")), bytes.HasPrefix(head, []byte("MZ")),
		bytes.HasPrefix(head, []byte{0xfe, 0xed, 0xfa, 0xce}), bytes.HasPrefix(head, []byte{0xfe, 0xed, 0xfa, 0xcf}),
		bytes.HasPrefix(head, []byte{0xce, 0xfa, 0xed, 0xfe}), bytes.HasPrefix(head, []byte{0xcf, 0xfa, 0xed, 0xfe}),
		bytes.HasPrefix(head, []byte{0xca, 0xfe, 0xba, 0xbe}):
		return Raw, nil
	}
	n := min(len(head), 8)
	return 0, fmt.Errorf("%w (first bytes % x)", ErrUnknownFormat, head[:n])
}

// Options bound what an artifact may unpack to.
type Options struct {
	// Executable is the file name that must exist at the top of the
	// version directory (a raw artifact is written under this name).
	Executable string
	// MaxEntrySize caps each file; MaxTotalSize caps their sum (zip bombs).
	MaxEntrySize int64
	MaxTotalSize int64
	// MaxEntries caps the number of entries (default 100000).
	MaxEntries int
}

func (o Options) validate() error {
	var errs []error
	if o.Executable == "" || strings.ContainsAny(o.Executable, `/\`) || o.Executable == "." || o.Executable == ".." {
		errs = append(errs, fmt.Errorf("unpack: executable must be a plain file name, got %q", o.Executable))
	}
	if o.MaxEntrySize <= 0 || o.MaxTotalSize <= 0 {
		errs = append(errs, errors.New("unpack: size caps must be positive"))
	}
	return errors.Join(errs...)
}

// Unpack extracts src into <parent>/<name> (through <name>.tmp) and returns
// the final directory. An existing <name> or <name>.tmp is replaced.
func Unpack(src, parent, name string, o Options) (dir string, err error) {
	if err := o.validate(); err != nil {
		return "", err
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = 100000
	}
	final := filepath.Join(parent, name)
	tmp := final + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return "", fmt.Errorf("unpack: clear %s: %w", tmp, err)
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", fmt.Errorf("unpack: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	f, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("unpack: %w", err)
	}
	defer f.Close()
	head := make([]byte, 8)
	n, _ := io.ReadFull(f, head)
	format, err := Detect(head[:n])
	if err != nil {
		return "", fmt.Errorf("unpack %s: %w", filepath.Base(src), err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("unpack: %w", err)
	}
	x := &extractor{root: tmp, o: o, seen: map[string]bool{}}
	switch format {
	case Raw:
		err = x.file(o.Executable, 0o755, f, -1)
	case TarGz:
		err = x.tarGz(f)
	case Zip:
		st, serr := f.Stat()
		if serr != nil {
			return "", fmt.Errorf("unpack: %w", serr)
		}
		err = x.zip(f, st.Size())
	}
	if err != nil {
		return "", fmt.Errorf("unpack %s (%s): %w", filepath.Base(src), format, err)
	}
	if err := hoistExecutable(tmp, o.Executable); err != nil {
		return "", err
	}
	if err := syncTree(tmp); err != nil {
		return "", err
	}
	if err := os.RemoveAll(final); err != nil {
		return "", fmt.Errorf("unpack: replace %s: %w", final, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("unpack: rename %s: %w", tmp, err)
	}
	if err := journal.SyncDir(parent); err != nil {
		return "", err
	}
	return final, nil
}

// hoistExecutable accepts archives whose content sits under one top-level
// directory (name_version_os_arch/otelcol): that directory becomes the root.
// It then makes sure the executable is a regular, executable file.
func hoistExecutable(root, exe string) error {
	p := filepath.Join(root, exe)
	st, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		entries, rerr := os.ReadDir(root)
		if rerr == nil && len(entries) == 1 && entries[0].IsDir() {
			sub := filepath.Join(root, entries[0].Name())
			if s, e := os.Lstat(filepath.Join(sub, exe)); e == nil && s.Mode().IsRegular() {
				hoist := root + ".hoist"
				os.RemoveAll(hoist)
				if err := os.Rename(sub, hoist); err != nil {
					return fmt.Errorf("unpack: %w", err)
				}
				if err := os.Remove(root); err != nil {
					return fmt.Errorf("unpack: %w", err)
				}
				if err := os.Rename(hoist, root); err != nil {
					return fmt.Errorf("unpack: %w", err)
				}
				return hoistExecutable(root, exe)
			}
		}
		return fmt.Errorf("%w: no %q at the top of the artifact", ErrMissingExecutable, exe)
	}
	if err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %q is not a regular file", ErrMissingExecutable, exe)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o100 == 0 {
		if err := os.Chmod(p, st.Mode().Perm()|0o755); err != nil {
			return fmt.Errorf("unpack: %w", err)
		}
	}
	return nil
}

// syncTree fsyncs every directory bottom-up (files were synced when written).
func syncTree(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := journal.SyncDir(dirs[i]); err != nil {
			return err
		}
	}
	return nil
}
