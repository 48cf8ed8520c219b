package peerbuild

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"aead.dev/minisign"
)

func TestSign(t *testing.T) {
	pub, priv, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherPub, _, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "otelcol_0.149.0-m.1_linux_amd64.tar.gz")
	msg := []byte("release bytes")
	if err := os.WriteFile(path, msg, 0o644); err != nil {
		t.Fatal(err)
	}
	sig, err := Sign(path, priv)
	if err != nil {
		t.Fatal(err)
	}
	var s minisign.Signature
	if err := s.UnmarshalText(sig); err != nil {
		t.Fatalf("signature does not parse: %v\n%s", err, sig)
	}
	if s.Algorithm != minisign.HashEdDSA {
		t.Errorf("algorithm %v, want HashEdDSA (the minisign tool's default)", s.Algorithm)
	}
	if !strings.Contains(s.TrustedComment, "file:otelcol_0.149.0-m.1_linux_amd64.tar.gz") {
		t.Errorf("trusted comment %q does not name the file", s.TrustedComment)
	}
	if !minisign.Verify(pub, msg, sig) {
		t.Error("signature does not verify with the signing key")
	}
	if minisign.Verify(otherPub, msg, sig) {
		t.Error("signature verifies with another key")
	}
	if minisign.Verify(pub, []byte("release bytez"), sig) {
		t.Error("signature verifies for altered contents")
	}

	sigPath := filepath.Join(dir, "out.minisig")
	if err := SignTo(path, sigPath, priv); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(sigPath)
	if err != nil {
		t.Fatal(err)
	}
	if !minisign.Verify(pub, msg, written) {
		t.Error("SignTo wrote a signature that does not verify")
	}

	if _, err := Sign(filepath.Join(dir, "missing"), priv); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("signing a missing file: err = %v, want one naming it", err)
	}
	if err := SignTo(path, filepath.Join(dir, "no-dir", "x.minisig"), priv); err == nil {
		t.Error("SignTo into a missing directory: no error")
	}
}

func TestPublishSignedAndInstallTo(t *testing.T) {
	pub, priv, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	exe := filepath.Join(src, CollectorExecutable)
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755)
	archive := filepath.Join(src, archiveName(VersionM2, "linux", "amd64"))
	if err := writeArchive(archive, exe, CollectorExecutable); err != nil {
		t.Fatal(err)
	}
	sum, size, err := fileSHA256(archive)
	if err != nil {
		t.Fatal(err)
	}
	c := Collector{Version: VersionM2, Executable: exe, Archive: archive, ArchiveSHA256: sum, ArchiveSize: size}

	out := filepath.Join(t.TempDir(), "releases")
	a, err := c.PublishSigned(out, priv)
	if err != nil {
		t.Fatal(err)
	}
	if a.Path != filepath.Join(out, c.ArchiveName()) || a.SignaturePath != a.Path+".minisig" {
		t.Errorf("published to %s / %s", a.Path, a.SignaturePath)
	}
	data, err := os.ReadFile(a.Path)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := fileSHA256(a.Path); got != sum || a.SHA256 != sum || a.Size != size {
		t.Errorf("published copy sha %s (reported %s, size %d), want %s size %d", got, a.SHA256, a.Size, sum, size)
	}
	if !minisign.Verify(pub, data, a.Signature) {
		t.Error("published signature does not verify")
	}
	if _, err := os.Stat(archive + ".minisig"); err == nil {
		t.Error("PublishSigned wrote a signature next to the cached archive")
	}

	dst := filepath.Join(t.TempDir(), "root", "current", "otelcol")
	if err := c.InstallTo(dst); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o100 == 0 {
		t.Errorf("installed collector mode %v is not executable", st.Mode())
	}

	p := &Peers{Collectors: []Collector{c}}
	if _, err := p.Collector(VersionM2); err != nil {
		t.Error(err)
	}
	if _, err := p.Collector("0.0.1"); err == nil || !strings.Contains(err.Error(), "0.0.1") {
		t.Errorf("unknown version: err = %v, want one naming it", err)
	}
}
