package peerbuild

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// archiveModTime is the fixed modification time of archive entries, so the
// same executable always yields the same archive bytes (and sha256).
var archiveModTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// writeArchive packages the executable at binPath as the single entry
// name (mode 0755) of a gzip-compressed tar at dst. It stages to
// a temporary name in dst's directory, fsyncs, then renames, so dst is either
// absent or complete.
func writeArchive(dst, binPath, name string) (err error) {
	src, err := os.Open(binPath)
	if err != nil {
		return fmt.Errorf("open executable to package: %w", err)
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", binPath, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".archive-*")
	if err != nil {
		return fmt.Errorf("create staging file for %s: %w", dst, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	gz, err := gzip.NewWriterLevel(tmp, gzip.BestSpeed)
	if err != nil {
		return err
	}
	gz.ModTime = archiveModTime
	tw := tar.NewWriter(gz)
	hdr := &tar.Header{
		Name:     name,
		Mode:     0o755,
		Size:     st.Size(),
		ModTime:  archiveModTime,
		Typeflag: tar.TypeReg,
		Uname:    "root",
		Gname:    "root",
		Format:   tar.FormatPAX,
	}
	if err = tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("write tar header for %s: %w", dst, err)
	}
	if _, err = io.Copy(tw, src); err != nil {
		return fmt.Errorf("write %s into %s: %w", binPath, dst, err)
	}
	if err = tw.Close(); err != nil {
		return fmt.Errorf("finish tar %s: %w", dst, err)
	}
	if err = gz.Close(); err != nil {
		return fmt.Errorf("finish gzip %s: %w", dst, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err = os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("install archive %s: %w", dst, err)
	}
	return nil
}

// fileSHA256 returns the hex sha256 and size of the file at path.
func fileSHA256(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("open %s for hashing: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
