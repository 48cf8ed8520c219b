package sitesetup

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/unpack"
	"github.com/myriarch/myriarch/agent/verify"
	"github.com/myriarch/myriarch/internal/filehash"
)

// Bounds of what is read of the artifacts.
const (
	maxSumFile      = 4 << 10
	maxSignature    = 4 << 10
	maxArchiveEntry = 1 << 30
	maxArchiveTotal = 2 << 30
	versionTimeout  = 30 * time.Second
)

// The artifacts' names, for this processor: the collector's archive, the
// Supervisor, the updater and its Sigstore verifier.
func CollectorArtifact(version string) string {
	return "otelcol_" + version + "_windows_" + runtime.GOARCH + ".zip"
}
func SupervisorArtifact() string { return "opampsupervisor_windows_" + runtime.GOARCH + ".exe" }
func UpdaterArtifact() string    { return "myriarch-updater_windows_" + runtime.GOARCH + ".exe" }
func SigstoreArtifact() string   { return "myriarch-sigstore_windows_" + runtime.GOARCH + ".exe" }

// artifacts names what the mode installs.
func (s *Settings) artifacts() []string {
	names := []string{UpdaterArtifact(), SigstoreArtifact()}
	if s.Mode == "binary" {
		names = append([]string{CollectorArtifact(s.CollectorVersion), SupervisorArtifact()}, names...)
	}
	return names
}

// checkArtifact checks name in dir against name.sha256 and name.minisig
// with key, and returns its path.
func checkArtifact(dir, name string, keys []verify.Key) (string, error) {
	path := filepath.Join(dir, name)
	fail := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("artifact %s: %s; nothing was installed", name, fmt.Sprintf(format, args...))
	}
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return fail("not found in %s", dir)
	}
	sum, err := readBounded(path+".sha256", maxSumFile)
	if err != nil {
		return fail("%v", err)
	}
	fields := strings.Fields(string(sum))
	want, err := hex.DecodeString(strings.ToLower(first(fields)))
	if err != nil || len(want) != 32 {
		return fail("%s.sha256 holds no SHA-256 digest", name)
	}
	got, err := filehash.SHA256(path)
	if err != nil {
		return fail("%v", err)
	}
	gotRaw, _ := hex.DecodeString(got)
	if err := verify.SHA256(want, gotRaw); err != nil {
		return fail("SHA-256 mismatch (expected %x, got %s)", want, got)
	}
	sig, err := readBounded(path+".minisig", maxSignature)
	if err != nil {
		return fail("%v", err)
	}
	if err := verify.Signature(keys, time.Now(), sig, verify.Content{SHA256: gotRaw, Path: path}); err != nil {
		return fail("minisign signature does not verify with the given key: %v", err)
	}
	return path, nil
}

func first(f []string) string {
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s: larger than %d bytes", filepath.Base(path), limit)
	}
	return b, err
}

// unpackCollector unpacks the checked archive into work and asks the
// collector there for its version: a wrong architecture, corruption or a
// mislabelled build is caught before anything changes.
func unpackCollector(ctx context.Context, archive, work, version string) (string, error) {
	name := filepath.Base(archive)
	dir, err := unpack.Unpack(archive, work, "collector", unpack.Options{Executable: CollectorExe,
		MaxEntrySize: maxArchiveEntry, MaxTotalSize: maxArchiveTotal})
	if err != nil {
		return "", fmt.Errorf("artifact %s: %w; nothing was installed", name, err)
	}
	// The same check an install makes: bounded output and time, the
	// version as the install engine reads it.
	out, err := install.RunVersion(ctx, filepath.Join(dir, CollectorExe), []string{"--version"}, versionTimeout)
	if err != nil {
		return "", fmt.Errorf("artifact %s: %s --version failed: %w; nothing was installed", name, CollectorExe, err)
	}
	if got := install.ParseVersion(out); got != version {
		return "", fmt.Errorf("artifact %s: %s --version reports %q, not %s (it said %q); nothing was installed",
			name, CollectorExe, got, version, install.Clip(out))
	}
	return dir, nil
}
