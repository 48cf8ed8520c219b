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
	"path/filepath"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"
	"github.com/open-telemetry/opamp-go/protobufs"
	"golang.org/x/crypto/blake2b"

	"github.com/myriarch/myriarch/agent/admission"
	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/verify"
)

// fault classifies why an install failed (what quarantine it earns).
type fault int

const (
	faultTransient fault = iota // network, registry, disk: retry later
	faultArtifact               // the image itself is bad: never again
	faultNone                   // shutdown: no status, the journal stays
	faultRefused                // the container, not the image: report, never quarantine
)

// failure is an install error with its class.
type failure struct {
	f   fault
	err error
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

func transient(format string, a ...any) error {
	return &failure{faultTransient, fmt.Errorf(format, a...)}
}
func artifact(format string, a ...any) error {
	return &failure{faultArtifact, fmt.Errorf(format, a...)}
}

func faultOf(ctx context.Context, err error) fault {
	if ctx.Err() != nil {
		return faultNone
	}
	var f *failure
	if errors.As(err, &f) {
		return f.f
	}
	return faultTransient
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
					return "", fmt.Errorf("header X-Registry-Auth: not base64: %v", err)
				}
			}
			var probe registry.AuthConfig
			if err := json.Unmarshal(raw, &probe); err != nil {
				return "", fmt.Errorf("header X-Registry-Auth: not an auth config: %v", err)
			}
			return v, nil
		case "Authorization":
			scheme, cred, _ := strings.Cut(v, " ")
			switch strings.ToLower(scheme) {
			case "basic":
				raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
				if err != nil {
					return "", fmt.Errorf("header Authorization: Basic credentials are not base64: %v", err)
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

// prepareImage makes the offered image present in the engine, verified,
// and returns what it is. Nothing running is touched.
func (t *txn) prepareImage(ctx context.Context) (ImageInfo, error) {
	if t.src.Pull != "" {
		return t.pull(ctx)
	}
	return t.loadTarball(ctx)
}

func (t *txn) pull(ctx context.Context) (ImageInfo, error) {
	e, p := t.e, t.pkg
	digest := "sha256:" + hex.EncodeToString(p.GetFile().GetContentHash())
	// The signature covers the digest text: the digest is the hash of the
	// manifest, which names every layer by its hash.
	if err := e.checkSignature(p.GetFile().GetSignature(), []byte(digest)); err != nil {
		return ImageInfo{}, err
	}
	ref, _ := reference.ParseNormalizedNamed(t.src.Pull)
	auth, err := registryAuth(p.GetFile().GetHeaders().GetHeaders(), reference.Domain(ref))
	if err != nil {
		return ImageInfo{}, artifact("registry credentials: %v", err)
	}
	e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_Downloading, "", &protobufs.PackageDownloadDetails{}), false)
	pctx, cancel := context.WithTimeout(ctx, e.o.PullTimeout)
	defer cancel()
	resp, err := e.docker.ImagePull(pctx, t.src.Pull, client.ImagePullOptions{RegistryAuth: auth})
	if err != nil {
		return ImageInfo{}, transient("pull %s: %v", t.src.Pull, err)
	}
	err = t.pullProgress(pctx, resp)
	resp.Close()
	if err != nil {
		return ImageInfo{}, transient("pull %s: %v", t.src.Pull, err)
	}
	img, err := e.docker.ImageInspect(ctx, t.src.Pull)
	if err != nil {
		return ImageInfo{}, transient("inspect pulled image %s: %v", t.src.Pull, err)
	}
	// The engine checked the manifest against the pinned digest while
	// pulling; check again that what is stored under this name is it.
	found := false
	for _, rd := range img.RepoDigests {
		n, err := reference.ParseNormalizedNamed(rd)
		if err != nil {
			continue
		}
		if d, ok := n.(reference.Digested); ok && n.Name() == t.src.Repo && d.Digest().String() == digest {
			found = true
		}
	}
	if !found {
		return ImageInfo{}, artifact("digest mismatch: pulled image %s has repo digests %v, none is %s", img.ID, img.RepoDigests, digest)
	}
	info := ImageInfo{Digest: digest, ID: img.ID, Ref: t.src.Pull, Hash: admission.HexHash(p)}
	if img.Config != nil {
		info.Version = img.Config.Labels[VersionLabel]
	}
	return info, t.checkVersion(info)
}

func (t *txn) checkVersion(info ImageInfo) error {
	if info.Version != t.pkg.GetVersion() {
		return artifact("image %s has %s=%q, the offer says version %q", info.ID, VersionLabel, info.Version, t.pkg.GetVersion())
	}
	return nil
}

// checkSignature verifies a minisign signature over msg (required when
// trust.require_signature is set).
func (e *Engine) checkSignature(sig, msg []byte) error {
	switch {
	case len(sig) > 0 && len(e.keys) > 0:
		f, err := os.CreateTemp(filepath.Join(e.o.StateDir, stagingDir), "signed-*.txt")
		if err != nil {
			return transient("verify: %v", err)
		}
		defer os.Remove(f.Name())
		_, werr := f.Write(msg)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return transient("verify: %v", werr)
		}
		sum := blake2b.Sum512(msg)
		if err := verify.Signature(e.keys, sig, verify.Content{BLAKE2b512: sum[:], Path: f.Name()}); err != nil {
			return artifact("verify: %w", err)
		}
	case e.o.RequireSignature:
		return artifact("verify: %w", verify.ErrNoSignature)
	default:
		e.log.Warn("installing an unverified image: no signature or no trusted key, and trust.require_signature is false")
	}
	return nil
}

func (t *txn) loadTarball(ctx context.Context) (ImageInfo, error) {
	e, p := t.e, t.pkg
	e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_Downloading, "", &protobufs.PackageDownloadDetails{}), false)
	hdr := http.Header{}
	for _, h := range p.GetFile().GetHeaders().GetHeaders() {
		hdr.Add(h.GetKey(), h.GetValue())
	}
	staged := filepath.Join(e.o.StateDir, stagingDir, admission.HexHash(p)[:16]+".image.tar")
	defer os.Remove(staged)
	prehash := len(p.GetFile().GetSignature()) > 0 && len(e.keys) > 0
	res, err := e.fetch.Fetch(ctx, download.Request{
		URL: t.src.TarballURL, Header: hdr, Dest: staged, Prehash: prehash,
		Progress: func(pr download.Progress) {
			e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_Downloading, "",
				&protobufs.PackageDownloadDetails{DownloadPercent: max(pr.Percent, 0), DownloadBytesPerSecond: pr.BytesPerSecond}), false)
		},
	})
	if err != nil {
		if errors.Is(err, download.ErrTooLarge) {
			return ImageInfo{}, artifact("download: %w", err)
		}
		return ImageInfo{}, transient("download: %w", err)
	}
	if err := verify.SHA256(p.GetFile().GetContentHash(), res.SHA256); err != nil {
		return ImageInfo{}, artifact("verify: %w", err)
	}
	sig := p.GetFile().GetSignature()
	switch {
	case len(sig) > 0 && len(e.keys) > 0:
		if err := verify.Signature(e.keys, sig, verify.Content{BLAKE2b512: res.BLAKE2b512, Path: staged}); err != nil {
			return ImageInfo{}, artifact("verify: %w", err)
		}
	case e.o.RequireSignature:
		return ImageInfo{}, artifact("verify: %w", verify.ErrNoSignature)
	default:
		e.log.Warn("loading an unverified image tarball: no signature or no trusted key, and trust.require_signature is false")
	}
	e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_Installing, "", nil), false)
	f, err := os.Open(staged)
	if err != nil {
		return ImageInfo{}, transient("load: %v", err)
	}
	defer f.Close()
	out, err := e.docker.ImageLoad(ctx, f, client.ImageLoadWithQuiet(true))
	if err != nil {
		return ImageInfo{}, transient("docker image load: %v", err)
	}
	refs, err := loadedImages(out)
	out.Close()
	if err != nil {
		return ImageInfo{}, artifact("docker image load: %v", err)
	}
	if len(refs) != 1 {
		return ImageInfo{}, artifact("the tarball holds %d images (%v), want exactly one", len(refs), refs)
	}
	img, err := e.docker.ImageInspect(ctx, refs[0])
	if err != nil {
		return ImageInfo{}, transient("inspect loaded image %s: %v", refs[0], err)
	}
	info := ImageInfo{ID: img.ID, Ref: refs[0], Hash: admission.HexHash(p)}
	if img.Config != nil {
		info.Version = img.Config.Labels[VersionLabel]
	}
	return info, t.checkVersion(info)
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
			return refs, fmt.Errorf("reading load output: %v", err)
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
func (t *txn) pullProgress(ctx context.Context, resp client.ImagePullResponse) error {
	type layer struct{ cur, total int64 }
	layers := map[string]*layer{}
	last, lastBytes := time.Now(), int64(0)
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
		t.e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_Downloading, "",
			&protobufs.PackageDownloadDetails{DownloadPercent: pct, DownloadBytesPerSecond: max(rate, 0)}), false)
	}
	for m, err := range resp.JSONMessages(ctx) {
		if err != nil {
			return err
		}
		if m.Error != nil {
			return m.Error
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
