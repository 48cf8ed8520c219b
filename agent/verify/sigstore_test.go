package verify

import (
	"crypto/sha256"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/testing/ca"

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
	policy := SigstorePolicy{Identity: testIdentity, Issuer: testIssuer, TrustedRoot: sigstoretest.Root(t, vs), WithoutSCT: true}
	e, err := vs.SignAtTime(testIdentity, testIssuer, artifact, now)
	if err != nil {
		t.Fatal(err)
	}
	noTlog := sigstoretest.BundleOf(t, vs, e, false)
	forged := strings.Replace(string(good), `"integratedTime":"`+itoa(now.Unix())+`"`, `"integratedTime":"`+itoa(now.Unix()-60)+`"`, 1)
	if forged == string(good) {
		t.Fatal("the forged bundle is the good one")
	}
	for _, tc := range []struct {
		name   string
		policy SigstorePolicy
		bundle []byte
		digest []byte
		want   string // "" verifies
	}{
		{"a good bundle", policy, good, digest[:], ""},
		{"the identity by regular expression", SigstorePolicy{IdentityRegexp: `^https://github\.com/open-telemetry/opentelemetry-collector-releases/.*@refs/tags/v.*$`,
			Issuer: testIssuer, TrustedRoot: policy.TrustedRoot, WithoutSCT: true}, good, digest[:], ""},
		{"another identity", SigstorePolicy{Identity: "https://github.com/someone/else/.github/workflows/x.yaml@refs/heads/main", Issuer: testIssuer,
			TrustedRoot: policy.TrustedRoot, WithoutSCT: true}, good, digest[:], "SAN"},
		{"another issuer", SigstorePolicy{Identity: testIdentity, Issuer: "https://accounts.google.com", TrustedRoot: policy.TrustedRoot, WithoutSCT: true}, good, digest[:], "issuer"},
		{"an expired certificate without a timestamp", policy, sigstoretest.Bundle(t, vs, testIdentity, testIssuer, artifact, now.Add(30*time.Minute)), digest[:], "certificate validity"},
		{"no log entry", policy, noTlog, digest[:], "transparency log"},
		{"a forged log entry", policy, []byte(forged), digest[:], "verify"},
		{"a bundle of another artifact", policy, good, otherDigest[:], "digest"},
		{"a root whose log is not the bundle's", SigstorePolicy{Identity: testIdentity, Issuer: testIssuer, TrustedRoot: sigstoretest.Root(t, other), WithoutSCT: true}, good, digest[:], "log"},
		{"a root that does not cover the certificate", SigstorePolicy{Identity: testIdentity, Issuer: testIssuer, TrustedRoot: sigstoretest.RootOf(t, other, vs), WithoutSCT: true}, good, digest[:], "certificate"},
		{"a certificate without an SCT, when one is required", SigstorePolicy{Identity: testIdentity, Issuer: testIssuer, TrustedRoot: policy.TrustedRoot}, good, digest[:], "signed certificate timestamp"},
		{"not a bundle", policy, []byte(`{"mediaType": "nope"}`), digest[:], "not a Sigstore bundle"},
		{"a bundle too large", policy, []byte("{" + strings.Repeat(" ", MaxBundleSize) + "}"), digest[:], "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSigstore(tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Verify(tc.bundle, tc.digest)
			t.Logf("%v", err)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (!errors.Is(err, ErrSigstore) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want ErrSigstore naming %q", err, tc.want)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A policy needs an identity and an issuer; a root must parse.
func TestSigstorePolicyRefused(t *testing.T) {
	for _, p := range []SigstorePolicy{{Issuer: testIssuer}, {Identity: testIdentity}, {Identity: testIdentity, Issuer: testIssuer, IdentityRegexp: "("},
		{Identity: testIdentity, Issuer: testIssuer, TrustedRoot: []byte("{}")}} {
		if _, err := NewSigstore(p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	if _, err := NewSigstore(SigstorePolicy{Identity: testIdentity, Issuer: testIssuer}); err != nil {
		t.Fatalf("the public-good root: %v", err)
	}
	if end, err := RootExpiry(nil); err != nil || !end.IsZero() {
		t.Fatalf("the public-good root's expiry: %v %v (its current CA has no end)", end, err)
	}
}

func TestIsSigstoreBundle(t *testing.T) {
	for sig, want := range map[string]bool{"untrusted comment: x\nRWQ…": false, " {\"mediaType\": \"x\"}": true, "": false} {
		if IsSigstoreBundle([]byte(sig)) != want {
			t.Errorf("%q: %v", sig, !want)
		}
	}
}
