package verify

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

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

// SigstoreHelperName is the program that verifies Sigstore bundles
// (cmd/myriarch-sigstore), installed beside the updater: sigstore-go, which
// it links, would add about 10 MiB to the updater's resident memory for a
// check made once an install.
const SigstoreHelperName = "myriarch-sigstore"

// SigstoreTimeout bounds one verification by the helper.
const SigstoreTimeout = time.Minute

// SigstorePolicy is who may sign what the updater installs with Sigstore
// (keyless: a Fulcio certificate for a workload's identity, recorded in
// Rekor): the certificate's identity (its subject alternative name, such
// as a release workflow's URL on a tag) and its OIDC issuer, each exact or
// by regular expression.
type SigstorePolicy struct {
	Identity, IdentityRegexp string
	Issuer, IssuerRegexp     string
	// TrustedRootFile is a trusted_root.json; "": the public-good
	// instance's (sigstoreroot.PublicGood, built into the helper).
	TrustedRootFile string
	// WithoutTlog accepts a bundle without a transparency-log entry when
	// it carries a signed timestamp; the default requires the entry, its
	// inclusion verified offline from the bundle's proof and signed entry
	// timestamp (no call to Rekor).
	WithoutTlog bool
	// WithoutSCT accepts a certificate without a signed certificate
	// timestamp of a CT log; the default requires one, as Fulcio's
	// certificates carry it (a private CA's may not).
	WithoutSCT bool
	// Helper is the verifying program ("": SigstoreHelperName beside the
	// running executable).
	Helper string
}

// Check reports what is wrong with the policy itself.
func (p SigstorePolicy) Check() error {
	var errs []error
	if p.Identity == "" && p.IdentityRegexp == "" {
		errs = append(errs, errors.New("an identity (or identity_regexp) is required"))
	}
	if p.Issuer == "" && p.IssuerRegexp == "" {
		errs = append(errs, errors.New("an issuer (or issuer_regexp) is required"))
	}
	for _, r := range []struct{ what, expr string }{{"identity_regexp", p.IdentityRegexp}, {"issuer_regexp", p.IssuerRegexp}} {
		if _, err := regexp.Compile(r.expr); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.what, err))
		}
	}
	return errors.Join(errs...)
}

// AddFlags declares the policy's flags on fs, as the helper and
// `myriarchd catalog import` take them (Args writes them).
func (p *SigstorePolicy) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&p.Identity, "identity", "", "the certificate `IDENTITY` that may sign (e.g. a release workflow's URL on a tag)")
	fs.StringVar(&p.IdentityRegexp, "identity-regexp", "", "the identity, as a regular `EXPRESSION`")
	fs.StringVar(&p.Issuer, "issuer", "", "the identity's OIDC `ISSUER`, e.g. https://token.actions.githubusercontent.com")
	fs.StringVar(&p.IssuerRegexp, "issuer-regexp", "", "the issuer, as a regular `EXPRESSION`")
	fs.StringVar(&p.TrustedRootFile, "trusted-root", "", "a trusted_root.json `FILE` (default: the public-good instance's, built in)")
	fs.BoolVar(&p.WithoutTlog, "without-tlog", false, "accept a bundle without a transparency-log entry that has a signed timestamp")
	fs.BoolVar(&p.WithoutSCT, "without-sct", false, "accept a certificate without a CT log's timestamp")
}

// Args are the helper's flags for the policy.
func (p SigstorePolicy) Args() []string {
	var out []string
	for _, f := range []struct{ name, v string }{{"identity", p.Identity}, {"identity-regexp", p.IdentityRegexp},
		{"issuer", p.Issuer}, {"issuer-regexp", p.IssuerRegexp}, {"trusted-root", p.TrustedRootFile}} {
		if f.v != "" {
			out = append(out, "--"+f.name+"="+f.v)
		}
	}
	if p.WithoutTlog {
		out = append(out, "--without-tlog")
	}
	if p.WithoutSCT {
		out = append(out, "--without-sct")
	}
	return out
}

// Sigstore checks Sigstore bundles against a policy, with the helper. It
// is safe for concurrent use.
type Sigstore struct {
	p      SigstorePolicy
	helper string
}

// NewSigstore prepares the checks of p. A helper that is not installed
// refuses each bundle, saying so (HelperMissing tells validate).
func NewSigstore(p SigstorePolicy) (*Sigstore, error) {
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("sigstore: %w", err)
	}
	return &Sigstore{p: p, helper: p.HelperPath()}, nil
}

// HelperPath is where the helper is: Helper, or SigstoreHelperName beside
// the running executable.
func (p SigstorePolicy) HelperPath() string {
	if p.Helper != "" {
		return p.Helper
	}
	name := SigstoreHelperName
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	exe, err := os.Executable()
	if err != nil {
		return name
	}
	return filepath.Join(filepath.Dir(exe), name)
}

// HelperMissing says why the helper cannot run ("" when it is there).
func (p SigstorePolicy) HelperMissing() string {
	path := p.HelperPath()
	if _, err := os.Stat(path); err != nil {
		return fmt.Sprintf("the verifier %s is not installed (%s): every package offered with a Sigstore bundle will be refused", SigstoreHelperName, path)
	}
	return ""
}

// IsSigstoreBundle reports whether an offer's signature is meant as a
// Sigstore bundle (a JSON object) rather than a minisign signature (text
// that starts "untrusted comment:"); Verify says whether it is one.
func IsSigstoreBundle(sig []byte) bool {
	s := bytes.TrimSpace(sig)
	return len(s) > 0 && s[0] == '{'
}

// Verify checks a Sigstore bundle (the JSON of a .sigstore.json file) over
// the artifact whose SHA-256 is sha256: the helper reads the bundle on
// its standard input and says why it refuses it.
func (s *Sigstore) Verify(bundleJSON, sha256 []byte) error {
	if len(bundleJSON) > MaxBundleSize {
		return fmt.Errorf("%w: the bundle has %d bytes, more than %d", ErrSigstore, len(bundleJSON), MaxBundleSize)
	}
	if len(sha256) != 32 {
		return fmt.Errorf("%w: no SHA-256 of the artifact to check it against", ErrSigstore)
	}
	if _, err := os.Stat(s.helper); err != nil {
		return fmt.Errorf("%w: the verifier %s is not installed beside the updater: %v", ErrSigstore, SigstoreHelperName, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), SigstoreTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.helper, append([]string{"verify", "--sha256=" + hex.EncodeToString(sha256)}, s.p.Args()...)...)
	cmd.Stdin = bytes.NewReader(bundleJSON)
	var out limited
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("%w: the verifier gave no answer within %s", ErrSigstore, SigstoreTimeout)
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		why := strings.TrimSpace(out.String())
		why = strings.TrimPrefix(why, SigstoreHelperName+" verify: ")
		why = strings.TrimPrefix(why, ErrSigstore.Error()+": ")
		return fmt.Errorf("%w: %s", ErrSigstore, why)
	default:
		return fmt.Errorf("sigstore: running %s: %w: %s", s.helper, err, strings.TrimSpace(out.String()))
	}
}

// limited keeps the first 4 KiB written to it.
type limited struct{ bytes.Buffer }

func (l *limited) Write(p []byte) (int, error) {
	if room := 4096 - l.Len(); room > 0 {
		l.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

var _ io.Writer = (*limited)(nil)

// RootExpiry reads a trusted_root.json (nil: the built-in public-good
// one) enough to say when it stops covering new signatures: the latest
// end of its certificate authorities' validity (zero when one has none).
func RootExpiry(trustedRoot []byte) (time.Time, error) {
	if trustedRoot == nil {
		trustedRoot = sigstoreroot.PublicGood
	}
	var doc struct {
		MediaType string `json:"mediaType"`
		CAs       []struct {
			ValidFor struct {
				End *time.Time `json:"end"`
			} `json:"validFor"`
		} `json:"certificateAuthorities"`
	}
	if err := json.Unmarshal(trustedRoot, &doc); err != nil {
		return time.Time{}, fmt.Errorf("sigstore trusted root: %w", err)
	}
	if !strings.HasPrefix(doc.MediaType, "application/vnd.dev.sigstore.trustedroot") {
		return time.Time{}, fmt.Errorf("sigstore trusted root: media type %q is not a trusted root's", doc.MediaType)
	}
	if len(doc.CAs) == 0 {
		return time.Time{}, errors.New("sigstore trusted root: no certificate authority")
	}
	var last time.Time
	for _, ca := range doc.CAs {
		if ca.ValidFor.End == nil {
			return time.Time{}, nil
		}
		if ca.ValidFor.End.After(last) {
			last = *ca.ValidFor.End
		}
	}
	return last, nil
}
