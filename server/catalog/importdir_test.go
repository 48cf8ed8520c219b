package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/testing/ca"

	"github.com/myriarch/myriarch/agent/verify"
	"github.com/myriarch/myriarch/agent/verify/sigstoretest"
	"github.com/myriarch/myriarch/server/estate"
)

// release writes an upstream release directory: an archive per platform,
// its bundle signed for identity, and the checksums file.
func release(t *testing.T, vs *ca.VirtualSigstore, identity string, platforms ...string) string {
	t.Helper()
	dir := t.TempDir()
	var sums strings.Builder
	for _, p := range platforms {
		name := fmt.Sprintf("otelcol-contrib_0.149.0_%s.tar.gz", p)
		data := []byte("archive for " + p)
		writeFile(t, filepath.Join(dir, name), data)
		writeFile(t, filepath.Join(dir, name+BundleSuffix), sigstoretest.Bundle(t, vs, identity, sigstoretest.Issuer, data, time.Now()))
		h := sha256.Sum256(data)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(h[:]), name)
	}
	writeFile(t, filepath.Join(dir, "opentelemetry-collector-releases_otelcol-contrib_checksums.txt"), []byte(sums.String()))
	writeFile(t, filepath.Join(dir, "otelcol_0.149.0_linux_amd64.tar.gz"), []byte("another package: left alone"))
	return dir
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func options(t *testing.T, vs *ca.VirtualSigstore, dir, est string) Options {
	return Options{Dir: dir, Estate: est, Package: "otelcol-contrib", Version: "0.149.0",
		Policy: verify.SigstorePolicy{Identity: sigstoretest.Identity, Issuer: sigstoretest.Issuer, WithoutSCT: true,
			TrustedRootFile: sigstoretest.RootFile(t, sigstoretest.Root(t, vs))}}
}

// A release whose every archive checks is copied into the estate with its
// bundles, and the estate loads it: each artifact offered with its bundle.
func TestImport(t *testing.T) {
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	dir := release(t, vs, sigstoretest.Identity, "linux_amd64", "linux_arm64")
	est := t.TempDir()
	got, err := Import(options(t, vs, dir, est))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Arch != "amd64" || got[1].Arch != "arm64" {
		t.Fatalf("imported %+v", got)
	}
	e, err := estate.Load(est)
	if err != nil {
		t.Fatal(err)
	}
	pv := e.Package("otelcol-contrib", "0.149.0")
	if pv == nil || len(pv.Artifacts) != 2 {
		t.Fatalf("catalog %+v", pv)
	}
	for _, a := range pv.Artifacts {
		bundle, _ := os.ReadFile(filepath.Join(dir, "otelcol-contrib_0.149.0_"+a.OS+"_"+a.Arch+".tar.gz"+BundleSuffix))
		if a.Signature != string(bundle) || a.Executable != "otelcol-contrib" || !strings.HasPrefix(a.File, "artifacts/otelcol-contrib/0.149.0/") {
			t.Fatalf("artifact %+v", a)
		}
	}
	// Again: the version is there; --force replaces it.
	if _, err := Import(options(t, vs, dir, est)); err == nil || !strings.Contains(err.Error(), "--force replaces it") {
		t.Fatalf("a second import: %v", err)
	}
	o := options(t, vs, dir, est)
	o.Force = true
	if _, err := Import(o); err != nil {
		t.Fatal(err)
	}
}

// A release with any archive that does not check is refused whole, every
// problem named, and the estate untouched.
func TestImportRefuses(t *testing.T) {
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		setup func(dir string)
		want  []string
	}{
		{"a bundle missing", func(dir string) {
			os.Remove(filepath.Join(dir, "otelcol-contrib_0.149.0_linux_arm64.tar.gz"+BundleSuffix))
		},
			[]string{"otelcol-contrib_0.149.0_linux_arm64.tar.gz: no Sigstore bundle"}},
		{"a .sig and .pem pair in place of a bundle", func(dir string) {
			name := filepath.Join(dir, "otelcol-contrib_0.149.0_linux_arm64.tar.gz")
			os.Remove(name + BundleSuffix)
			writeFile(t, name+".sig", []byte("MEUCIQ…"))
			writeFile(t, name+".pem", []byte("LS0tLS1CRUdJTi…"))
		}, []string{"otelcol-contrib_0.149.0_linux_arm64.tar.gz: only a .sig and .pem pair, which holds no transparency-log entry to check offline"}},
		{"an archive that is not what the checksums say", func(dir string) {
			writeFile(t, filepath.Join(dir, "otelcol-contrib_0.149.0_linux_amd64.tar.gz"), []byte("tampered"))
		}, []string{"otelcol-contrib_0.149.0_linux_amd64.tar.gz: SHA-256", "but the release's checksums say"}},
		{"a bundle of another identity", func(dir string) {
			data, _ := os.ReadFile(filepath.Join(dir, "otelcol-contrib_0.149.0_linux_arm64.tar.gz"))
			writeFile(t, filepath.Join(dir, "otelcol-contrib_0.149.0_linux_arm64.tar.gz"+BundleSuffix),
				sigstoretest.Bundle(t, vs, "https://github.com/someone/else/.github/workflows/x.yaml@refs/heads/main", sigstoretest.Issuer, data, time.Now()))
		}, []string{"otelcol-contrib_0.149.0_linux_arm64.tar.gz: sigstore bundle does not verify", "expected SAN value"}},
		{"no archive of the version", func(dir string) {
			matches, _ := filepath.Glob(filepath.Join(dir, "otelcol-contrib_*"))
			for _, m := range matches {
				os.Remove(m)
			}
		}, []string{"no archive of otelcol-contrib 0.149.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := release(t, vs, sigstoretest.Identity, "linux_amd64", "linux_arm64")
			tc.setup(dir)
			est := t.TempDir()
			_, err := Import(options(t, vs, dir, est))
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err %v, want %q", err, w)
				}
			}
			if entries, _ := os.ReadDir(est); len(entries) != 0 {
				t.Errorf("the estate was written: %v", entries)
			}
		})
	}
}
