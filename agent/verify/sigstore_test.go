package verify_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"aead.dev/minisign"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"golang.org/x/crypto/blake2b"

	"github.com/myriarch/myriarch/agent/verify"
	"github.com/myriarch/myriarch/agent/verify/sigstoretest"
)

// The updater's check runs the helper: a good bundle verifies; a refusal
// comes back as ErrSigstore with the helper's reason, once.
func TestSigstoreThroughTheHelper(t *testing.T) {
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	artifact := []byte("otelcol-contrib_0.149.0_linux_amd64.tar.gz")
	digest := sha256.Sum256(artifact)
	s, err := verify.NewSigstore(verify.SigstorePolicy{Identity: sigstoretest.Identity, Issuer: sigstoretest.Issuer, WithoutSCT: true,
		TrustedRootFile: sigstoretest.RootFile(t, sigstoretest.Root(t, vs)), Helper: sigstoretest.Helper(t)})
	if err != nil {
		t.Fatal(err)
	}
	good := sigstoretest.Bundle(t, vs, sigstoretest.Identity, sigstoretest.Issuer, artifact, time.Now())
	if err := s.Verify(good, digest[:]); err != nil {
		t.Fatalf("a good bundle: %v", err)
	}
	other := sha256.Sum256([]byte("other"))
	err = s.Verify(good, other[:])
	if !errors.Is(err, verify.ErrSigstore) || err.Error() != "sigstore bundle does not verify: failed to verify signature: artifact does not match digest" {
		t.Fatalf("another artifact: %v", err)
	}
	missing := verify.SigstorePolicy{Identity: "x", Issuer: "y", Helper: filepath.Join(t.TempDir(), "none")}
	m, err := verify.NewSigstore(missing)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Verify(good, digest[:]); !errors.Is(err, verify.ErrSigstore) || !strings.Contains(err.Error(), "the verifier myriarch-sigstore is not installed beside the updater") {
		t.Fatalf("a missing helper: %v", err)
	}
	if w := missing.HelperMissing(); !strings.Contains(w, "every package offered with a Sigstore bundle will be refused") {
		t.Fatalf("HelperMissing %q", w)
	}
}

func TestIsSigstoreBundle(t *testing.T) {
	for sig, want := range map[string]bool{"untrusted comment: x\nRWQ…": false, " {\"mediaType\": \"x\"}": true, "": false} {
		if verify.IsSigstoreBundle([]byte(sig)) != want {
			t.Errorf("%q: %v", sig, !want)
		}
	}
}

// What verifying a 100 MiB archive costs, from its bytes: minisign
// (BLAKE2b-512, then Ed25519) against Sigstore (SHA-256, then the helper
// checking the bundle: certificate chain, identity, log entry).
func BenchmarkVerify100MiB(b *testing.B) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 100<<20/16)
	pub, priv, err := minisign.GenerateKey(nil)
	if err != nil {
		b.Fatal(err)
	}
	r := minisign.NewReader(bytes.NewReader(data))
	if _, err := r.Read(make([]byte, len(data)+1)); err != nil {
		b.Fatal(err)
	}
	msig := r.Sign(priv)
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		b.Fatal(err)
	}
	bundle := sigstoretest.Bundle(b, vs, sigstoretest.Identity, sigstoretest.Issuer, data, time.Now())
	root := filepath.Join(b.TempDir(), "trusted_root.json")
	if err := os.WriteFile(root, sigstoretest.Root(b, vs), 0o644); err != nil {
		b.Fatal(err)
	}
	s, err := verify.NewSigstore(verify.SigstorePolicy{Identity: sigstoretest.Identity, Issuer: sigstoretest.Issuer, WithoutSCT: true,
		TrustedRootFile: root, Helper: sigstoretest.Helper(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("minisign", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			sum := blake2b.Sum512(data)
			if err := verify.Signature([]verify.Key{{PublicKey: pub}}, time.Now(), msig, verify.Content{BLAKE2b512: sum[:]}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sigstore", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			sum := sha256.Sum256(data)
			if err := s.Verify(bundle, sum[:]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sigstore bundle alone", func(b *testing.B) {
		sum := sha256.Sum256(data)
		for b.Loop() {
			if err := s.Verify(bundle, sum[:]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The flags the updater gives the helper (Args) are the flags the helper
// reads (AddFlags).
func TestSigstorePolicyFlags(t *testing.T) {
	p := verify.SigstorePolicy{Identity: "a", IdentityRegexp: "b", Issuer: "c", IssuerRegexp: "d", TrustedRootFile: "/r", WithoutTlog: true, WithoutSCT: true}
	var q verify.SigstorePolicy
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	q.AddFlags(fs)
	if err := fs.Parse(p.Args()); err != nil || q != p {
		t.Fatalf("%+v from %q (%v), want %+v", q, p.Args(), err, p)
	}
}
