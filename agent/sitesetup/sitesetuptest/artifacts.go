// Package sitesetuptest writes signed site artifacts for the site setup's
// tests, on Linux and under Wine.
package sitesetuptest

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"aead.dev/minisign"

	"github.com/myriarch/myriarch/agent/sitesetup"
	"github.com/myriarch/myriarch/internal/keyring/keyringtest"
)

// Executables are the contents of a site's executables.
type Executables struct {
	Collector, Supervisor, Updater, Sigstore []byte
}

// Write puts the artifacts of version into dir, each beside its .sha256
// and its .minisig signed with key: the collector's zip holding
// otelcol-contrib.exe, and the other executables as they are.
func Write(t testing.TB, dir string, key keyringtest.Key, version string, e Executables) {
	t.Helper()
	for name, b := range map[string][]byte{
		sitesetup.CollectorArtifact(version): CollectorZip(t, e.Collector),
		sitesetup.SupervisorArtifact():       e.Supervisor,
		sitesetup.UpdaterArtifact():          e.Updater,
		sitesetup.SigstoreArtifact():         e.Sigstore,
	} {
		WriteSigned(t, dir, name, b, key)
	}
}

// WriteSigned puts name into dir with its .sha256 and .minisig.
func WriteSigned(t testing.TB, dir, name string, b []byte, key keyringtest.Key) {
	t.Helper()
	sum := sha256.Sum256(b)
	for file, content := range map[string][]byte{
		name:              b,
		name + ".sha256":  []byte(hex.EncodeToString(sum[:]) + "  " + name + "\n"),
		name + ".minisig": minisign.SignWithComments(key.Private, b, "site artifact", name),
	} {
		if err := os.WriteFile(filepath.Join(dir, file), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// CollectorZip is a collector release for Windows: a zip holding exe as
// the site's collector executable.
func CollectorZip(t testing.TB, exe []byte) []byte {
	t.Helper()
	var z bytes.Buffer
	zw := zip.NewWriter(&z)
	h := &zip.FileHeader{Name: sitesetup.CollectorExe, Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = w.Write(exe)
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return z.Bytes()
}
