//go:build linux

package installer_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"aead.dev/minisign"
)

// artifactSet is a directory of signed artifacts as install.sh expects them, made by the
// test: fake executables (shell scripts) that print their version.
type artifactSet struct {
	dir           string
	publicKey     string // "RW..." form
	publicKeyFile string // the same key as minisign writes it to a .pub file
	private       minisign.PrivateKey
}

func newArtifactSet(t testing.TB) *artifactSet {
	t.Helper()
	pub, priv, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	text, err := pub.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	return &artifactSet{dir: t.TempDir(), publicKey: pub.String(), publicKeyFile: string(text), private: priv}
}

func fakeExecutable(name, version string) []byte {
	return fmt.Appendf(nil, "#!/bin/sh\necho \"%s version %s\"\n", name, version)
}

// clone copies the set into a new directory, signed by the same key.
func (a *artifactSet) clone(t testing.TB) *artifactSet {
	t.Helper()
	c := *a
	c.dir = t.TempDir()
	if err := os.CopyFS(c.dir, os.DirFS(a.dir)); err != nil {
		t.Fatal(err)
	}
	return &c
}

// add writes name with its .sha256 and .minisig next to it.
func (a *artifactSet) add(t testing.TB, name string, content []byte) {
	t.Helper()
	sum := sha256.Sum256(content)
	write(t, filepath.Join(a.dir, name), content, 0o644)
	write(t, filepath.Join(a.dir, name+".sha256"), []byte(hex.EncodeToString(sum[:])+"  "+name+"\n"), 0o644)
	write(t, filepath.Join(a.dir, name+".minisig"), minisign.Sign(a.private, content), 0o644)
}

// addCollector packs a fake otelcol-contrib of the given version as install.sh names it.
func (a *artifactSet) addCollector(t testing.TB, version string) string {
	t.Helper()
	name := fmt.Sprintf("otelcol_%s_linux_%s.tar.gz", version, runtime.GOARCH)
	a.add(t, name, tarGz(t, map[string]tarEntry{
		"otelcol-contrib": {mode: 0o755, body: fakeExecutable("otelcol-contrib", version)},
		"README.md":       {mode: 0o644, body: []byte("fake collector " + version + "\n")},
	}))
	return name
}

// addBinaries adds the supervisor, the updater and the updater's Sigstore verifier.
func (a *artifactSet) addBinaries(t testing.TB, version string) {
	t.Helper()
	a.add(t, "opampsupervisor_linux_"+runtime.GOARCH, fakeExecutable("opampsupervisor", version))
	a.add(t, "myriarch-updater_linux_"+runtime.GOARCH, fakeExecutable("myriarch-updater", version))
	a.add(t, sigstoreArtifact, fakeExecutable("myriarch-sigstore", version))
}

// sigstoreArtifact is the Sigstore verifier's artifact, installed as bin/myriarch-sigstore.
var sigstoreArtifact = "myriarch-sigstore_linux_" + runtime.GOARCH

// newRootKey returns a minisign public key that is not the set's, as "RW..." and as the
// text of a .pub file: a root key for --root-key.
func newRootKey(t testing.TB) (key, file string) {
	t.Helper()
	pub, _, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	text, err := pub.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	return pub.String(), string(text)
}

// complete returns a set with a collector of version v and the binaries.
func completeArtifacts(t testing.TB, v string) *artifactSet {
	t.Helper()
	a := newArtifactSet(t)
	a.addCollector(t, v)
	a.addBinaries(t, "1.0.0")
	return a
}

type tarEntry struct {
	mode     int64
	body     []byte
	typeflag byte
	linkname string
}

func tarGz(t testing.TB, entries map[string]tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	// Sorted for reproducible archives.
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		e := entries[n]
		h := &tar.Header{Name: n, Mode: e.mode, Size: int64(len(e.body)), Typeflag: e.typeflag, Linkname: e.linkname}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func write(t testing.TB, path string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, mode); err != nil {
		t.Fatal(err)
	}
}
