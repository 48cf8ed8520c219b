package binary

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/admission"
	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/pkgstatus"
	"github.com/myriarch/myriarch/agent/unpack"
	"github.com/myriarch/myriarch/agent/verify"
)

// runSelf installs a new updater binary: same admission, download and
// verification as a collector package, a `--version` check, then the binary
// swap and a restart request (reported true). Confirm at the next start
// finishes it.
func (e *Engine) runSelf(ctx context.Context, jb job) (restarting bool) {
	p := jb.pkg
	hash := admission.HexHash(p)
	st := func(s protobufs.PackageStatusEnum, msg string, d *protobufs.PackageDownloadDetails) *protobufs.PackageStatus {
		return &protobufs.PackageStatus{Name: SelfPackage, ServerOfferedVersion: p.GetVersion(), ServerOfferedHash: pkgstatus.OfferedHash(p),
			Status: s, ErrorMessage: msg, DownloadDetails: d}
	}
	fail := func(err error, transient bool) {
		if ctx.Err() != nil {
			return
		}
		e.log.Warn("self-update failed; the running updater is unchanged", "version", p.GetVersion(), "err", err)
		e.quarantine(hash, p.GetVersion(), err.Error(), transient)
		e.setStatus(st(protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, err.Error(), nil), true)
	}
	e.mu.Lock()
	_, err := e.admit(jb.name, p)
	e.mu.Unlock()
	if err != nil {
		e.setStatus(st(protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, err.Error(), nil), true)
		return false
	}
	stage := filepath.Join(e.o.StateDir, stagingDir, "self-"+hash[:16])
	defer os.RemoveAll(stage)
	defer os.Remove(stage + ".download")
	hdr := http.Header{}
	for _, h := range p.GetFile().GetHeaders().GetHeaders() {
		hdr.Add(h.GetKey(), h.GetValue())
	}
	e.setStatus(st(protobufs.PackageStatusEnum_PackageStatusEnum_Downloading, "", &protobufs.PackageDownloadDetails{}), false)
	res, err := e.fetch.Fetch(ctx, download.Request{
		URL: p.GetFile().GetDownloadUrl(), Header: hdr, Dest: stage + ".download", Prehash: true,
		Progress: func(pr download.Progress) {
			e.setStatus(st(protobufs.PackageStatusEnum_PackageStatusEnum_Downloading, "",
				&protobufs.PackageDownloadDetails{DownloadPercent: max(pr.Percent, 0), DownloadBytesPerSecond: pr.BytesPerSecond}), false)
		},
	})
	if err != nil {
		fail(fmt.Errorf("download: %w", err), !errors.Is(err, download.ErrTooLarge))
		return false
	}
	if err := verify.SHA256(p.GetFile().GetContentHash(), res.SHA256); err != nil {
		fail(fmt.Errorf("verify: %w", err), false)
		return false
	}
	if sig := p.GetFile().GetSignature(); len(sig) > 0 && len(e.keys) > 0 {
		if err := verify.Signature(e.keys, sig, verify.Content{BLAKE2b512: res.BLAKE2b512, Path: stage + ".download"}); err != nil {
			fail(fmt.Errorf("verify: %w", err), false)
			return false
		}
	} else if e.o.RequireSignature {
		fail(fmt.Errorf("verify: %w", verify.ErrNoSignature), false)
		return false
	}
	e.setStatus(st(protobufs.PackageStatusEnum_PackageStatusEnum_Installing, "", nil), false)
	exeName := defaultUpdaterExe()
	dir, err := unpack.Unpack(stage+".download", filepath.Dir(stage), filepath.Base(stage), unpack.Options{
		Executable: exeName, MaxEntrySize: e.o.MaxPackageSize, MaxTotalSize: 2 * e.o.MaxPackageSize,
	})
	if err != nil {
		fail(err, false)
		return false
	}
	newExe := filepath.Join(dir, exeName)
	out, err := runVersion(ctx, newExe, e.o.UpdaterVersionArgs, e.o.VersionCheckTimeout)
	if err == nil {
		err = checkVersion(out, p.GetVersion())
	}
	if err != nil {
		fail(err, false)
		return false
	}
	if err := e.self.Apply(newExe, e.o.UpdaterVersion, p.GetVersion(), hash, hex.EncodeToString(p.GetHash())); err != nil {
		fail(err, true)
		return false
	}
	e.log.Info("updater binary replaced; restarting", "from", e.o.UpdaterVersion, "to", p.GetVersion())
	// Installing until the new binary confirms itself at its next start.
	e.setStatus(st(protobufs.PackageStatusEnum_PackageStatusEnum_Installing, "", nil), true)
	e.o.RequestRestart(fmt.Sprintf("self-update to %s", p.GetVersion()))
	return true
}
