package container

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/install"
)

// Fetch implements install.Fetcher for images pinned by digest
// (docker://<ref>@sha256:<hex>): the signature, which covers the digest
// text (the digest is the hash of the manifest, which names every layer by
// its hash), is checked first; the engine pulls by digest with the offer's
// registry credentials and checks the manifest against it; the image
// stored under the name must then carry that digest. Image tarballs are
// left to the engine's download.
func (b *Backend) Fetch(ctx context.Context, t *install.Txn) (bool, error) {
	s := b.swapFor(t)
	if s.src.Pull == "" {
		return false, nil
	}
	p := t.Offer()
	digest := "sha256:" + hex.EncodeToString(p.GetFile().GetContentHash())
	if err := t.VerifySignatureOf([]byte(digest)); err != nil {
		return true, err
	}
	ref, err := reference.ParseNormalizedNamed(s.src.Pull)
	if err != nil {
		return true, install.Failf(install.Artifact, "image reference %s: %w", s.src.Pull, err)
	}
	auth, err := registryAuth(p.GetFile().GetHeaders().GetHeaders(), reference.Domain(ref))
	if err != nil {
		return true, install.Failf(install.Artifact, "registry credentials: %w", err)
	}
	t.Progress(&protobufs.PackageDownloadDetails{})
	pctx, cancel := context.WithTimeout(ctx, b.o.PullTimeout)
	defer cancel()
	resp, err := b.docker.ImagePull(pctx, s.src.Pull, client.ImagePullOptions{RegistryAuth: auth})
	if err != nil {
		return true, install.Failf(install.Transient, "pull %s: %w", s.src.Pull, err)
	}
	err = b.pullProgress(pctx, t, resp)
	resp.Close()
	if err != nil {
		return true, install.Failf(install.Transient, "pull %s: %w", s.src.Pull, err)
	}
	if err := t.Step(install.CPDownloaded); err != nil {
		return true, install.Failf(install.Transient, "journal: %w", err)
	}
	img, err := b.docker.ImageInspect(ctx, s.src.Pull)
	if err != nil {
		return true, install.Failf(install.Transient, "inspect pulled image %s: %w", s.src.Pull, err)
	}
	// The engine checked the manifest against the pinned digest while
	// pulling; check again that what is stored under this name is it.
	found := false
	for _, rd := range img.RepoDigests {
		n, err := reference.ParseNormalizedNamed(rd)
		if err != nil {
			continue
		}
		if d, ok := n.(reference.Digested); ok && n.Name() == s.src.Repo && d.Digest().String() == digest {
			found = true
		}
	}
	if !found {
		return true, install.Failf(install.Artifact, "digest mismatch: pulled image %s has repo digests %v, none is %s", img.ID, img.RepoDigests, digest)
	}
	info := &ImageInfo{Digest: digest, ID: img.ID, Ref: s.src.Pull}
	if img.Config != nil {
		info.Version = img.Config.Labels[VersionLabel]
	}
	s.pulled = info
	return true, nil
}

// loadTarball loads a verified image tarball (`docker save` format) into
// the engine and returns the one image it holds.
func (b *Backend) loadTarball(ctx context.Context, path string) (ImageInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return ImageInfo{}, install.Failf(install.Transient, "load: %w", err)
	}
	defer f.Close()
	out, err := b.docker.ImageLoad(ctx, f, client.ImageLoadWithQuiet(true))
	if err != nil {
		return ImageInfo{}, install.Failf(install.Transient, "docker image load: %w", err)
	}
	refs, err := loadedImages(out)
	out.Close()
	if err != nil {
		return ImageInfo{}, install.Failf(install.Artifact, "docker image load: %w", err)
	}
	if len(refs) != 1 {
		return ImageInfo{}, install.Failf(install.Artifact, "the tarball holds %d images (%v), want exactly one", len(refs), refs)
	}
	img, err := b.docker.ImageInspect(ctx, refs[0])
	if err != nil {
		return ImageInfo{}, install.Failf(install.Transient, "inspect loaded image %s: %w", refs[0], err)
	}
	info := ImageInfo{ID: img.ID, Ref: refs[0]}
	if img.Config != nil {
		info.Version = img.Config.Labels[VersionLabel]
	}
	return info, nil
}

// registryAuth turns the offer's headers into the X-Registry-Auth value the
// engine forwards to the registry: "Authorization: Basic <b64 user:pass>"
// (username/password), "Authorization: Bearer <token>" (registry token), or
// an explicit "X-Registry-Auth" (base64url JSON AuthConfig) used as is.
// Other headers cannot be passed through a pull and are refused.
func registryAuth(hdrs []*protobufs.Header, registryHost string) (string, error) {
	var ac *registry.AuthConfig
	for _, h := range hdrs {
		k, v := http.CanonicalHeaderKey(h.GetKey()), strings.TrimSpace(h.GetValue())
		switch k {
		case "X-Registry-Auth":
			raw, err := base64.URLEncoding.DecodeString(v)
			if err != nil {
				if raw, err = base64.StdEncoding.DecodeString(v); err != nil {
					return "", fmt.Errorf("header X-Registry-Auth: not base64: %w", err)
				}
			}
			var probe registry.AuthConfig
			if err := json.Unmarshal(raw, &probe); err != nil {
				return "", fmt.Errorf("header X-Registry-Auth: not an auth config: %w", err)
			}
			return v, nil
		case "Authorization":
			scheme, cred, _ := strings.Cut(v, " ")
			switch strings.ToLower(scheme) {
			case "basic":
				raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
				if err != nil {
					return "", fmt.Errorf("header Authorization: Basic credentials are not base64: %w", err)
				}
				user, pass, ok := strings.Cut(string(raw), ":")
				if !ok {
					return "", errors.New("header Authorization: Basic credentials must be user:password")
				}
				ac = &registry.AuthConfig{Username: user, Password: pass, ServerAddress: registryHost}
			case "bearer":
				ac = &registry.AuthConfig{RegistryToken: strings.TrimSpace(cred), ServerAddress: registryHost}
			default:
				return "", fmt.Errorf("header Authorization: scheme %q not supported for registry pulls (Basic or Bearer)", scheme)
			}
		default:
			return "", fmt.Errorf("header %q cannot be sent with a registry pull (only Authorization and X-Registry-Auth)", h.GetKey())
		}
	}
	if ac == nil {
		return "", nil
	}
	js, err := json.Marshal(ac)
	if err != nil {
		return "", err
	}
	return base64.URLEncoding.EncodeToString(js), nil
}

// loadedImages reads the image load output: "Loaded image: <ref>" or
// "Loaded image ID: <id>" lines, or an error.
func loadedImages(r io.Reader) ([]string, error) {
	dec := json.NewDecoder(io.LimitReader(r, 16<<20))
	var refs []string
	for {
		var m struct {
			Stream      string `json:"stream"`
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return refs, fmt.Errorf("reading load output: %w", err)
		}
		if m.Error != "" {
			return nil, errors.New(m.Error)
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return nil, errors.New(m.ErrorDetail.Message)
		}
		for _, line := range strings.Split(m.Stream, "\n") {
			line = strings.TrimSpace(line)
			if ref, ok := strings.CutPrefix(line, "Loaded image ID: "); ok {
				refs = append(refs, ref)
			} else if ref, ok := strings.CutPrefix(line, "Loaded image: "); ok {
				refs = append(refs, ref)
			}
		}
	}
	return refs, nil
}

// pullProgress follows the engine's pull messages to the end and reports
// Downloading with the overall layer download percentage and rate at most
// every 2 s (the OpAMP contract asks for at least every 5 s).
func (b *Backend) pullProgress(ctx context.Context, t *install.Txn, resp client.ImagePullResponse) error {
	type layer struct{ cur, total int64 }
	layers := map[string]*layer{}
	last, lastBytes := time.Now(), int64(0)
	first := true
	report := func(force bool) {
		if !force && time.Since(last) < 2*time.Second {
			return
		}
		var cur, total int64
		for _, l := range layers {
			cur, total = cur+l.cur, total+l.total
		}
		pct := 0.0
		switch {
		case force:
			pct = 100 // the pull completed
		case total > 0:
			pct = 100 * float64(cur) / float64(total)
		}
		rate := float64(cur-lastBytes) / max(time.Since(last).Seconds(), 0.001)
		last, lastBytes = time.Now(), cur
		t.Progress(&protobufs.PackageDownloadDetails{DownloadPercent: pct, DownloadBytesPerSecond: max(rate, 0)})
	}
	for m, err := range resp.JSONMessages(ctx) {
		if err != nil {
			return err
		}
		if m.Error != nil {
			return m.Error
		}
		if first && m.Progress != nil && m.Progress.Current > 0 {
			first = false
			t.Reach(install.CPDownloading)
		}
		if m.ID != "" && m.Progress != nil && m.Progress.Total > 0 && m.Status == "Downloading" {
			l := layers[m.ID]
			if l == nil {
				l = &layer{}
				layers[m.ID] = l
			}
			l.cur, l.total = m.Progress.Current, m.Progress.Total
		}
		if m.ID != "" && (m.Status == "Download complete" || m.Status == "Pull complete") {
			if l := layers[m.ID]; l != nil {
				l.cur = l.total
			}
		}
		report(false)
	}
	report(true)
	return nil
}
