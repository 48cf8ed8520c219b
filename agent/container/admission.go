package container

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/hashicorp/go-version"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// ErrRefused wraps every admission refusal.
var ErrRefused = errors.New("offer refused by local policy")

var safeVersion = regexp.MustCompile(`^v?[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$`)

// source is a parsed download_url.
type source struct {
	// Pull is set for docker://<ref>@sha256:<hex>: the reference to pull
	// (without the scheme) and its repository name.
	Pull string
	Repo string
	// TarballURL is set for an http(s) image tarball.
	TarballURL string
}

// parseSource interprets an offer's download_url in container mode and
// checks a pinned digest against content_hash.
func parseSource(raw string, contentHash []byte) (source, error) {
	if rest, ok := strings.CutPrefix(raw, "docker://"); ok {
		ref, err := reference.ParseNormalizedNamed(rest)
		if err != nil {
			return source{}, fmt.Errorf("download_url %q: not an image reference: %v", raw, err)
		}
		dg, ok := ref.(reference.Digested)
		if !ok {
			return source{}, fmt.Errorf("download_url %q: must pin a digest (docker://<ref>@sha256:<hex>)", raw)
		}
		if dg.Digest().Algorithm() != "sha256" {
			return source{}, fmt.Errorf("download_url %q: digest algorithm %s, want sha256", raw, dg.Digest().Algorithm())
		}
		if want := hex.EncodeToString(contentHash); dg.Digest().Encoded() != want {
			return source{}, fmt.Errorf("digest mismatch: download_url pins %s but content_hash is sha256:%s", dg.Digest(), want)
		}
		return source{Pull: ref.String(), Repo: ref.Name()}, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return source{}, fmt.Errorf("download_url %q: container mode accepts docker://<ref>@sha256:<hex> or an http(s) image tarball URL", raw)
	}
	return source{TarballURL: raw}, nil
}

// admit applies local policy to one offered package. Called with e.mu held.
func (e *Engine) admit(name string, p *protobufs.PackageAvailable) (source, error) {
	refuse := func(format string, a ...any) (source, error) {
		return source{}, fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, a...))
	}
	switch {
	case name == e.o.Package && p.GetType() == protobufs.PackageType_PackageType_Addon:
	case name == e.o.Package:
		return refuse("package %q offered as %s; it must be an Addon", name, p.GetType())
	case p.GetType() == protobufs.PackageType_PackageType_TopLevel:
		return refuse("TopLevel package %q: in container mode the updater is replaced with its own image, not by an offer", name)
	default:
		return refuse("unknown package %q: this updater installs only %q (Addon)", name, e.o.Package)
	}
	if n := len(p.GetFile().GetContentHash()); n != 32 {
		return refuse("file.content_hash must be a 32-byte SHA-256, got %d bytes", n)
	}
	src, err := parseSource(p.GetFile().GetDownloadUrl(), p.GetFile().GetContentHash())
	if err != nil {
		return refuse("%v", err)
	}
	offered, err := version.NewVersion(p.GetVersion())
	if err != nil || !safeVersion.MatchString(p.GetVersion()) {
		return refuse("unparsable version %q", p.GetVersion())
	}
	if e.o.RequireSignature && len(p.GetFile().GetSignature()) == 0 {
		return refuse("unsigned package: trust.require_signature is set and the offer has no file.signature")
	}
	if e.image != nil && e.image.Version != "" && !e.o.AllowDowngrade {
		if cur, err := version.NewVersion(e.image.Version); err == nil && offered.LessThan(cur) {
			return refuse("downgrade from %s to %s refused (trust.allow_downgrade is false)", e.image.Version, p.GetVersion())
		}
	}
	if err := e.quarantined(hexHash(p)); err != nil {
		return source{}, err
	}
	return src, nil
}

// quarantined refuses a hash that failed before.
func (e *Engine) quarantined(hash string) error {
	q, err := e.loadQuarantine()
	if err != nil {
		e.log.Warn("quarantine unreadable", "err", err)
		return nil
	}
	ent, ok := q[hash]
	if !ok {
		return nil
	}
	if !ent.Transient {
		return fmt.Errorf("%w: previously failed: version %s with this hash failed at %s (%s); offer a different hash",
			ErrRefused, ent.Version, ent.Failed.Format(time.RFC3339), ent.Reason)
	}
	if time.Now().Before(ent.RetryAfter) {
		return fmt.Errorf("%w: previously failed: version %s failed at %s (%s); next attempt allowed after %s",
			ErrRefused, ent.Version, ent.Failed.Format(time.RFC3339), ent.Reason, ent.RetryAfter.Format(time.RFC3339))
	}
	return nil
}

func hexHash(p *protobufs.PackageAvailable) string {
	return hex.EncodeToString(p.GetFile().GetContentHash())
}

func unhex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}

func sameHash(a, b *protobufs.PackageAvailable) bool { return hexHash(a) == hexHash(b) }
