package container

import (
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"

	"github.com/distribution/reference"
	"github.com/open-telemetry/opamp-go/protobufs"
)

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
			return source{}, fmt.Errorf("download_url %q: not an image reference: %w", raw, err)
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

// Admit implements install.Admitter: the download URL must be an image
// pinned by digest or an image tarball over http(s).
func (b *Backend) Admit(p *protobufs.PackageAvailable) error {
	_, err := parseSource(p.GetFile().GetDownloadUrl(), p.GetFile().GetContentHash())
	return err
}
