package container

import (
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"

	"github.com/distribution/reference"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/admission"
)

// ErrRefused wraps every admission refusal (the same error in both modes).
var ErrRefused = admission.ErrRefused

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
		return source{}, admission.Refusef(format, a...)
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
	if err := admission.CheckContentHash(p); err != nil {
		return source{}, err
	}
	src, err := parseSource(p.GetFile().GetDownloadUrl(), p.GetFile().GetContentHash())
	if err != nil {
		return refuse("%v", err)
	}
	running := ""
	if e.image != nil {
		running = e.image.Version
	}
	if err := e.policy().Check(p, running); err != nil {
		return source{}, err
	}
	return src, nil
}

// policy is the trust.* policy of this engine with its quarantine.
func (e *Engine) policy() admission.Policy {
	return admission.Policy{
		RequireSignature: e.o.RequireSignature,
		AllowDowngrade:   e.o.AllowDowngrade,
		Quarantine:       e.quarantineStore(),
	}
}

func unhex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}
