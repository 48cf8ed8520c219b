package install

import (
	"context"
	"errors"
	"net/http"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/verify"
)

// acquire gets the offered artifact and verifies it: a back-end's Fetcher
// (an image pulled by digest) or a download into staging/ (hashed on the
// fly, resumed, size-capped, disk space checked first), then its SHA-256
// and signature. Nothing running is touched.
func (e *Engine) acquire(ctx context.Context, t *Txn) error {
	handled := false
	if f, ok := t.b.Backend.(Fetcher); ok {
		var err error
		if handled, err = f.Fetch(ctx, t); err != nil {
			return err
		}
	}
	if !handled {
		if err := e.download(ctx, t); err != nil {
			return err
		}
	}
	if err := t.Step(CPVerified); err != nil {
		return Failf(Transient, "journal: %w", err)
	}
	return nil
}

func (e *Engine) download(ctx context.Context, t *Txn) error {
	p := t.pkg
	t.Progress(&protobufs.PackageDownloadDetails{})
	hdr := http.Header{}
	for _, h := range p.GetFile().GetHeaders().GetHeaders() {
		hdr.Add(h.GetKey(), h.GetValue())
	}
	staged := e.stagingPath(t.rec.Hash)
	first := true
	res, err := e.fetch.Fetch(ctx, download.Request{
		URL: p.GetFile().GetDownloadUrl(), Header: hdr, Dest: staged,
		// BLAKE2b-512 (minisign's pre-hash) only when a signature will be checked.
		Prehash: len(p.GetFile().GetSignature()) > 0 && e.checksMinisign() && !verify.IsSigstoreBundle(p.GetFile().GetSignature()),
		Progress: func(pr download.Progress) {
			if first && pr.Bytes > 0 {
				first = false
				t.Reach(CPDownloading)
			}
			t.Progress(&protobufs.PackageDownloadDetails{DownloadPercent: max(pr.Percent, 0), DownloadBytesPerSecond: pr.BytesPerSecond})
		},
	})
	switch {
	case err != nil && errors.Is(err, download.ErrTooLarge):
		return Failf(Artifact, "download: %w", err)
	case err != nil:
		return Failf(Transient, "download: %w", err)
	}
	if err := t.Step(CPDownloaded); err != nil {
		return Failf(Transient, "journal: %w", err)
	}
	if e.o.Observer != nil {
		e.o.Observer.Downloaded(res.Size)
	}
	if err := verify.SHA256(p.GetFile().GetContentHash(), res.SHA256); err != nil {
		e.verificationFailed()
		return Failf(Artifact, "verify: %w", err)
	}
	if err := t.VerifySignature(verify.Content{BLAKE2b512: res.BLAKE2b512, SHA256: res.SHA256, Path: staged}); err != nil {
		e.verificationFailed()
		return err
	}
	t.artifact = staged
	return nil
}
