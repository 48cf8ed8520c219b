// Package sigstoreverify verifies Sigstore bundles with sigstore-go. Only
// the helper program (cmd/myriarch-sigstore) links it: the updater runs
// that program for each bundle it checks (verify.Sigstore).
package sigstoreverify

import (
	"fmt"
	"os"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/myriarch/myriarch/agent/verify"
	"github.com/myriarch/myriarch/agent/verify/sigstoreroot"
)

// Verifier checks Sigstore bundles against a policy. It is safe for
// concurrent use.
type Verifier struct {
	v  *sgverify.Verifier
	id sgverify.CertificateIdentity
}

// New prepares the checks of p, its trusted root read.
func New(p verify.SigstorePolicy) (*Verifier, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	data := sigstoreroot.PublicGood
	if p.TrustedRootFile != "" {
		var err error
		if data, err = os.ReadFile(p.TrustedRootFile); err != nil {
			return nil, fmt.Errorf("sigstore trusted root: %w", err)
		}
	}
	tr, err := root.NewTrustedRootFromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("sigstore trusted root: %w", err)
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
	v, err := sgverify.NewVerifier(tr, opts...)
	if err != nil {
		return nil, fmt.Errorf("sigstore: %w", err)
	}
	return &Verifier{v: v, id: id}, nil
}

// Verify checks a Sigstore bundle (the JSON of a .sigstore.json file) over
// the artifact whose SHA-256 is digest.
func (s *Verifier) Verify(bundleJSON, sha256 []byte) error {
	if len(bundleJSON) > verify.MaxBundleSize {
		return fmt.Errorf("%w: the bundle has %d bytes, more than %d", verify.ErrSigstore, len(bundleJSON), verify.MaxBundleSize)
	}
	if len(sha256) != 32 {
		return fmt.Errorf("%w: no SHA-256 of the artifact to check it against", verify.ErrSigstore)
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(bundleJSON); err != nil {
		return fmt.Errorf("%w: not a Sigstore bundle: %v", verify.ErrSigstore, err)
	}
	_, err := s.v.Verify(&b, sgverify.NewPolicy(sgverify.WithArtifactDigest("sha256", sha256), sgverify.WithCertificateIdentity(s.id)))
	if err != nil {
		return fmt.Errorf("%w: %v", verify.ErrSigstore, err)
	}
	return nil
}
