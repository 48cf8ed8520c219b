package verify

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/myriarch/myriarch/agent/verify/sigstoreroot"
)

// Errors of a Sigstore verification.
var (
	// ErrSigstore: a Sigstore bundle does not verify under the policy.
	ErrSigstore = errors.New("sigstore bundle does not verify")
	// ErrNoSigstorePolicy: an offer carries a Sigstore bundle and the
	// updater has no trust.sigstore policy to check it with.
	ErrNoSigstorePolicy = errors.New("sigstore bundle offered, and trust.sigstore names no identity to check it with")
)

// MaxBundleSize bounds a Sigstore bundle read from an offer.
const MaxBundleSize = 256 << 10

// SigstorePolicy is who may sign what the updater installs with Sigstore
// (keyless: a Fulcio certificate for a workload's identity, recorded in
// Rekor): the certificate's identity (its subject alternative name, such
// as a release workflow's URL on a tag) and its OIDC issuer, each exact or
// by regular expression.
type SigstorePolicy struct {
	Identity, IdentityRegexp string
	Issuer, IssuerRegexp     string
	// TrustedRoot is a trusted_root.json; nil: the public-good instance's
	// (sigstoreroot.PublicGood).
	TrustedRoot []byte
	// WithoutTlog accepts a bundle without a transparency-log entry when
	// it carries a signed timestamp; the default requires the entry, its
	// inclusion verified offline from the bundle's proof and signed entry
	// timestamp (no call to Rekor).
	WithoutTlog bool
	// WithoutSCT accepts a certificate without a signed certificate
	// timestamp of a CT log; the default requires one, as Fulcio's
	// certificates carry it (a private CA's may not).
	WithoutSCT bool
}

// Sigstore checks Sigstore bundles against a policy. It is safe for
// concurrent use.
type Sigstore struct {
	v  *sgverify.Verifier
	id sgverify.CertificateIdentity
}

// NewSigstore prepares the checks of p.
func NewSigstore(p SigstorePolicy) (*Sigstore, error) {
	data := p.TrustedRoot
	if data == nil {
		data = sigstoreroot.PublicGood
	}
	tr, err := root.NewTrustedRootFromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("sigstore trusted root: %w", err)
	}
	return newSigstore(tr, p)
}

func newSigstore(tm root.TrustedMaterial, p SigstorePolicy) (*Sigstore, error) {
	if p.Identity == "" && p.IdentityRegexp == "" || p.Issuer == "" && p.IssuerRegexp == "" {
		return nil, errors.New("sigstore: an identity (or identity_regexp) and an issuer (or issuer_regexp) are required")
	}
	id, err := sgverify.NewShortCertificateIdentity(p.Issuer, p.IssuerRegexp, p.Identity, p.IdentityRegexp)
	if err != nil {
		return nil, fmt.Errorf("sigstore identity: %w", err)
	}
	var opts []sgverify.VerifierOption
	if !p.WithoutSCT {
		opts = append(opts, sgverify.WithSignedCertificateTimestamps(1))
	}
	if p.WithoutTlog {
		opts = append(opts, sgverify.WithObserverTimestamps(1))
	} else {
		opts = append(opts, sgverify.WithTransparencyLog(1), sgverify.WithIntegratedTimestamps(1))
	}
	v, err := sgverify.NewVerifier(tm, opts...)
	if err != nil {
		return nil, fmt.Errorf("sigstore: %w", err)
	}
	return &Sigstore{v: v, id: id}, nil
}

// IsSigstoreBundle reports whether an offer's signature is meant as a
// Sigstore bundle (a JSON object) rather than a minisign signature (text
// that starts "untrusted comment:"); Verify says whether it is one.
func IsSigstoreBundle(sig []byte) bool {
	s := bytes.TrimSpace(sig)
	return len(s) > 0 && s[0] == '{'
}

// Verify checks a Sigstore bundle (the JSON of a .sigstore.json file) over
// the artifact whose SHA-256 is digest.
func (s *Sigstore) Verify(bundleJSON, sha256 []byte) error {
	if len(bundleJSON) > MaxBundleSize {
		return fmt.Errorf("%w: the bundle has %d bytes, more than %d", ErrSigstore, len(bundleJSON), MaxBundleSize)
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(bundleJSON); err != nil {
		return fmt.Errorf("%w: not a Sigstore bundle: %v", ErrSigstore, err)
	}
	return s.verifyEntity(&b, sha256)
}

func (s *Sigstore) verifyEntity(e sgverify.SignedEntity, sha256 []byte) error {
	if len(sha256) != 32 {
		return fmt.Errorf("%w: no SHA-256 of the artifact to check it against", ErrSigstore)
	}
	_, err := s.v.Verify(e, sgverify.NewPolicy(sgverify.WithArtifactDigest("sha256", sha256), sgverify.WithCertificateIdentity(s.id)))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSigstore, err)
	}
	return nil
}

// RootExpiry is when the trusted root stops covering new signatures: the
// latest end of its certificate authorities' validity (zero when one has
// no end).
func RootExpiry(trustedRoot []byte) (time.Time, error) {
	if trustedRoot == nil {
		trustedRoot = sigstoreroot.PublicGood
	}
	tr, err := root.NewTrustedRootFromJSON(trustedRoot)
	if err != nil {
		return time.Time{}, fmt.Errorf("sigstore trusted root: %w", err)
	}
	var last time.Time
	for _, ca := range tr.FulcioCertificateAuthorities() {
		f, ok := ca.(*root.FulcioCertificateAuthority)
		if !ok || f.ValidityPeriodEnd.IsZero() {
			return time.Time{}, nil
		}
		if f.ValidityPeriodEnd.After(last) {
			last = f.ValidityPeriodEnd
		}
	}
	return last, nil
}
