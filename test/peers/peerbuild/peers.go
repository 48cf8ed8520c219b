package peerbuild

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"aead.dev/minisign"
)

// Peers is a complete, verified set of built peers. Every path points into the
// shared cache: treat the files as read-only and copy what a test modifies
// (Collector.InstallTo, Collector.PublishSigned).
type Peers struct {
	// Dir is the cache directory of this set of inputs.
	Dir string `json:"dir"`
	// GOOS is the system the executables are built for.
	GOOS string `json:"goos"`
	// Supervisor is the opampsupervisor executable.
	Supervisor string `json:"supervisor"`
	// SupervisorVersion is the upstream module version it was built from.
	SupervisorVersion string `json:"supervisorVersion"`
	// Collectors are VersionM1, VersionM2 and VersionBroken, in that order.
	Collectors []Collector `json:"collectors"`
}

// Collector is one built collector version and its release archive.
type Collector struct {
	// Version is the label; working collectors report it as service.version.
	Version string `json:"version"`
	// Broken marks the release that cannot start under the supervisor.
	Broken bool `json:"broken"`
	// Executable is the collector executable (named CollectorExecutable,
	// with ".exe" for Windows).
	Executable string `json:"executable"`
	// ExecutableSHA256 is the hex sha256 of Executable.
	ExecutableSHA256 string `json:"executableSHA256"`
	// Archive is the release archive otelcol_<version>_<goos>_<goarch>.tar.gz;
	// it holds the executable, named as Executable, at its root.
	Archive string `json:"archive"`
	// ArchiveSHA256 is the hex sha256 of Archive (an OpAMP content_hash).
	ArchiveSHA256 string `json:"archiveSHA256"`
	// ArchiveSize is the size of Archive in bytes.
	ArchiveSize int64 `json:"archiveSize"`
}

// Collector returns the collector with the given version label.
func (p *Peers) Collector(version string) (Collector, error) {
	for _, c := range p.Collectors {
		if c.Version == version {
			return c, nil
		}
	}
	return Collector{}, fmt.Errorf("peers: no collector version %q (have %s, %s, %s)", version, VersionM1, VersionM2, VersionBroken)
}

// ArchiveName returns the archive's file name.
func (c Collector) ArchiveName() string { return filepath.Base(c.Archive) }

// InstallTo copies the collector executable to dst (mode 0755), creating
// dst's directory. Use it to lay out a collector a test may later replace.
func (c Collector) InstallTo(dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("create directory for %s: %w", dst, err)
	}
	return copyFile(c.Executable, dst, 0o755)
}

// SignedArtifact is a copy of a collector archive with its minisign signature,
// ready to be served or offered by a test.
type SignedArtifact struct {
	Version string
	// Path is the archive copy; SignaturePath is Path+".minisig".
	Path          string
	SignaturePath string
	// Signature is the contents of SignaturePath.
	Signature []byte
	SHA256    string
	Size      int64
}

// PublishSigned copies the collector's archive into dir (keeping its release
// name), signs the copy with key and writes the signature next to it.
func (c Collector) PublishSigned(dir string, key minisign.PrivateKey) (SignedArtifact, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return SignedArtifact{}, fmt.Errorf("create publish directory %s: %w", dir, err)
	}
	dst := filepath.Join(dir, c.ArchiveName())
	if err := copyFile(c.Archive, dst, 0o644); err != nil {
		return SignedArtifact{}, err
	}
	sig, err := Sign(dst, key)
	if err != nil {
		return SignedArtifact{}, err
	}
	sigPath := dst + ".minisig"
	if err := os.WriteFile(sigPath, sig, 0o644); err != nil {
		return SignedArtifact{}, fmt.Errorf("write signature %s: %w", sigPath, err)
	}
	return SignedArtifact{
		Version:       c.Version,
		Path:          dst,
		SignaturePath: sigPath,
		Signature:     sig,
		SHA256:        c.ArchiveSHA256,
		Size:          c.ArchiveSize,
	}, nil
}

func copyFile(src, dst string, mode os.FileMode) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("open %s: %w", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", dst, cerr)
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return nil
}
