package sigstoreverify

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/testing/ca"

	"github.com/myriarch/myriarch/agent/verify"
	"github.com/myriarch/myriarch/agent/verify/sigstoretest"
)

const (
	testIdentity = sigstoretest.Identity
	testIssuer   = sigstoretest.Issuer
)

// Every refusal of a Sigstore bundle names why; only the signer the
// policy names, for this artifact, in the log, under a root that covers
// its certificate, passes.
func TestSigstore(t *testing.T) {
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	other, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	artifact := []byte("otelcol-contrib_0.149.0_linux_amd64.tar.gz")
	digest := sha256.Sum256(artifact)
	otherDigest := sha256.Sum256([]byte("something else"))
	now := time.Now()
	good := sigstoretest.Bundle(t, vs, testIdentity, testIssuer, artifact, now)
	// The test CA's certificates carry no SCT.
	policy := verify.SigstorePolicy{Identity: testIdentity, Issuer: testIssuer, TrustedRootFile: rootFile(t, sigstoretest.Root(t, vs)), WithoutSCT: true}
	e, err := vs.SignAtTime(testIdentity, testIssuer, artifact, now)
	if err != nil {
		t.Fatal(err)
	}
	noTlog := sigstoretest.BundleOf(t, vs, e, false)
	integrated := now.Add(sigstoretest.EntryDelay).Unix()
	forged := strings.Replace(string(good), `"integratedTime":"`+itoa(integrated)+`"`, `"integratedTime":"`+itoa(integrated-60)+`"`, 1)
	if forged == string(good) {
		t.Fatal("the forged bundle is the good one")
	}
	for _, tc := range []struct {
		name   string
		policy verify.SigstorePolicy
		bundle []byte
		digest []byte
		want   string // "" verifies
	}{
		{"a good bundle", policy, good, digest[:], ""},
		{"the identity by regular expression", verify.SigstorePolicy{IdentityRegexp: `^https://github\.com/open-telemetry/opentelemetry-collector-releases/.*@refs/tags/v.*$`,
			Issuer: testIssuer, TrustedRootFile: policy.TrustedRootFile, WithoutSCT: true}, good, digest[:], ""},
		{"another identity", verify.SigstorePolicy{Identity: "https://github.com/someone/else/.github/workflows/x.yaml@refs/heads/main", Issuer: testIssuer,
			TrustedRootFile: policy.TrustedRootFile, WithoutSCT: true}, good, digest[:], "SAN"},
		{"another issuer", verify.SigstorePolicy{Identity: testIdentity, Issuer: "https://accounts.google.com", TrustedRootFile: policy.TrustedRootFile, WithoutSCT: true}, good, digest[:], "issuer"},
		{"an expired certificate without a timestamp", policy, sigstoretest.Bundle(t, vs, testIdentity, testIssuer, artifact, now.Add(30*time.Minute)), digest[:], "certificate validity"},
		{"no log entry", policy, noTlog, digest[:], "transparency log"},
		{"a forged log entry", policy, []byte(forged), digest[:], "verify"},
		{"a bundle of another artifact", policy, good, otherDigest[:], "digest"},
		{"a root whose log is not the bundle's", verify.SigstorePolicy{Identity: testIdentity, Issuer: testIssuer, TrustedRootFile: rootFile(t, sigstoretest.Root(t, other)), WithoutSCT: true}, good, digest[:], "log"},
		{"a root that does not cover the certificate", verify.SigstorePolicy{Identity: testIdentity, Issuer: testIssuer, TrustedRootFile: rootFile(t, sigstoretest.RootOf(t, other, vs)), WithoutSCT: true}, good, digest[:], "certificate"},
		{"a certificate without an SCT, when one is required", verify.SigstorePolicy{Identity: testIdentity, Issuer: testIssuer, TrustedRootFile: policy.TrustedRootFile}, good, digest[:], "signed certificate timestamp"},
		{"not a bundle", policy, []byte(`{"mediaType": "nope"}`), digest[:], "not a Sigstore bundle"},
		{"a bundle too large", policy, []byte("{" + strings.Repeat(" ", verify.MaxBundleSize) + "}"), digest[:], "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Verify(tc.bundle, tc.digest)
			t.Logf("%v", err)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (!errors.Is(err, verify.ErrSigstore) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want verify.ErrSigstore naming %q", err, tc.want)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A policy needs an identity and an issuer; a root must parse.
func TestSigstorePolicyRefused(t *testing.T) {
	for _, p := range []verify.SigstorePolicy{{Issuer: testIssuer}, {Identity: testIdentity}, {Identity: testIdentity, Issuer: testIssuer, IdentityRegexp: "("},
		{Identity: testIdentity, Issuer: testIssuer, TrustedRootFile: rootFile(t, []byte("{}"))}} {
		if _, err := New(p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	if _, err := New(verify.SigstorePolicy{Identity: testIdentity, Issuer: testIssuer}); err != nil {
		t.Fatalf("the public-good root: %v", err)
	}
	if end, err := verify.RootExpiry(nil); err != nil || !end.IsZero() {
		t.Fatalf("the public-good root's expiry: %v %v (its current CA has no end)", end, err)
	}
}

func rootFile(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "trusted_root.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
