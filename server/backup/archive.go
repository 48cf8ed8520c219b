// Package backup is myriarchd's backup archive: a gzip'd tar of a store
// snapshot (store.Snapshotter) with a manifest naming the backend, the
// schema version, the estate revision and the SHA-256 of every file.
// Read checks an archive completely before anything is restored from it.
package backup

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/myriarch/myriarch/internal/filehash"
	"github.com/myriarch/myriarch/server/store"
)

// Format is the archive format this build writes and reads.
const Format = 1

// ManifestName is the archive's first entry.
const ManifestName = "manifest.json"

// maxManifest bounds the manifest read from an archive.
const maxManifest = 1 << 20

// Manifest describes an archive.
type Manifest struct {
	Format         int       `json:"format"`
	Created        time.Time `json:"created"`
	Server         string    `json:"server"` // the myriarchd version that wrote it
	EstateRevision string    `json:"estateRevision"`
	store.SnapshotInfo
	// SHA256 is the hex SHA-256 of each file, by name.
	SHA256 map[string]string `json:"sha256"`
}

// Write writes an archive of the snapshot files in dir that m.Files
// names, filling m.SHA256.
func Write(w io.Writer, dir string, m Manifest) error {
	m.Format = Format
	m.SHA256 = map[string]string{}
	for _, name := range m.Files {
		sum, err := filehash.SHA256(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		m.SHA256[name] = sum
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: ManifestName, Mode: 0o600, Size: int64(len(manifest)), ModTime: m.Created}); err != nil {
		return err
	}
	if _, err := tw.Write(manifest); err != nil {
		return err
	}
	for _, name := range m.Files {
		if err := addFile(tw, dir, name, m.Created); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

func addFile(tw *tar.Writer, dir, name string, at time.Time) error {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: st.Size(), ModTime: at}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// CorruptError is an archive that is not one, or does not hold what its
// manifest says.
type CorruptError struct{ Reason string }

func (e *CorruptError) Error() string { return "not a usable myriarchd backup: " + e.Reason }

func corrupt(format string, args ...any) error {
	return &CorruptError{Reason: fmt.Sprintf(format, args...)}
}

// Read extracts an archive into the empty directory dir and checks it: the
// manifest first, of a known format, then exactly the files it names, each
// with its SHA-256. Nothing is left half-checked: an error means dir must
// not be used.
func Read(r io.Reader, dir string) (Manifest, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return Manifest{}, corrupt("%v", err)
	}
	tr := tar.NewReader(zr)
	hdr, err := tr.Next()
	if err != nil {
		return Manifest{}, corrupt("no manifest: %v", err)
	}
	if hdr.Name != ManifestName || hdr.Size > maxManifest {
		return Manifest{}, corrupt("the first entry is %q, not %s", hdr.Name, ManifestName)
	}
	var m Manifest
	if err := json.NewDecoder(io.LimitReader(tr, maxManifest)).Decode(&m); err != nil {
		return Manifest{}, corrupt("manifest: %v", err)
	}
	if m.Format != Format {
		return Manifest{}, corrupt("archive format %d; this myriarchd reads format %d", m.Format, Format)
	}
	for _, name := range m.Files {
		if !filepath.IsLocal(name) || strings.ContainsAny(name, `/\`) || name == ManifestName {
			return Manifest{}, corrupt("manifest names the file %q", name)
		}
	}
	seen := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Manifest{}, corrupt("%v", err)
		}
		name := hdr.Name
		if !slices.Contains(m.Files, name) || seen[name] || hdr.Typeflag != tar.TypeReg {
			return Manifest{}, corrupt("unexpected entry %q", name)
		}
		seen[name] = true
		if err := extract(tr, filepath.Join(dir, name), m.SHA256[name]); err != nil {
			return Manifest{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	for _, name := range m.Files {
		if !seen[name] {
			return Manifest{}, corrupt("the manifest's file %q is missing", name)
		}
	}
	return m, nil
}

// extract writes one entry to path and checks its SHA-256.
func extract(r io.Reader, path, want string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return corrupt("%v", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return corrupt("SHA-256 %s, the manifest says %q", got, want)
	}
	return nil
}
