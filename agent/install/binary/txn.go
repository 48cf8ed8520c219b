package binary

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/admission"
	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/journal"
	"github.com/myriarch/myriarch/agent/unpack"
	"github.com/myriarch/myriarch/agent/verify"
)

// fault classifies why an install failed (what quarantine it earns).
type fault int

const (
	faultTransient fault = iota // network, disk, interruption: retry later
	faultArtifact               // the artifact itself is bad: never again
	faultNone                   // shutdown: no status, the journal stays
)

// txn is one running collector transaction.
type txn struct {
	e   *Engine
	rec *journal.Record
	pkg *protobufs.PackageAvailable
}

// step durably records a completed step, then passes its crash point.
func (t *txn) step(point string) error {
	if err := t.e.j.Save(t.rec, point); err != nil {
		return err
	}
	t.e.crashPoint(point)
	return nil
}

func (t *txn) status(s protobufs.PackageStatusEnum, msg string, details *protobufs.PackageDownloadDetails) *protobufs.PackageStatus {
	return &protobufs.PackageStatus{
		Name: t.rec.Package, ServerOfferedVersion: t.rec.Version, ServerOfferedHash: unhex(t.rec.StatusHash()),
		Status: s, ErrorMessage: msg, DownloadDetails: details,
	}
}

func (e *Engine) versionDir(dir string) string { return filepath.Join(e.o.Root, "versions", dir) }
func (e *Engine) exeIn(dir string) string      { return filepath.Join(e.versionDir(dir), e.o.Executable) }
func (e *Engine) stagingFile(rec *journal.Record) string {
	return filepath.Join(e.o.StateDir, stagingDir, rec.Hash[:16]+".download")
}

func (e *Engine) runCollector(ctx context.Context, jb job) {
	p := jb.pkg
	t := &txn{e: e, pkg: p, rec: &journal.Record{
		ID:        strconv.FormatInt(time.Now().UnixNano(), 36),
		Kind:      "collector",
		Package:   jb.name,
		Version:   p.GetVersion(),
		Hash:      admission.HexHash(p),
		OfferHash: hex.EncodeToString(p.GetHash()),
		Started:   time.Now().UTC(),
	}}
	t.rec.NewDir = p.GetVersion() + "-" + t.rec.Hash[:8]
	log := e.log.With("package", jb.name, "version", p.GetVersion(), "txn", t.rec.ID)

	// Admission again: the quarantine may have changed while queued.
	e.mu.Lock()
	_, err := e.admit(jb.name, p)
	if e.inst != nil {
		t.rec.PrevVersion, t.rec.PrevHash = e.inst.Version, e.inst.Hash
	}
	e.mu.Unlock()
	if err != nil {
		e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, err.Error(), nil), true)
		return
	}
	prev, err := readCurrent(e.o.Root)
	if err != nil {
		e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, err.Error(), nil), true)
		return
	}
	t.rec.PrevDir = prev
	if prev == t.rec.NewDir {
		e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_Installed, "", nil), true)
		return
	}
	log.Info("collector install started", "from", prev)
	if err := t.step(cpAdmitted); err != nil {
		t.fail(ctx, "journal", err, faultTransient)
		return
	}
	if f, err := t.prepare(ctx); err != nil {
		t.fail(ctx, "", err, f)
		return
	}
	t.activate(ctx)
}

// prepare downloads, verifies, unpacks and checks the new version; nothing
// running is touched.
func (t *txn) prepare(ctx context.Context) (fault, error) {
	e, p := t.e, t.pkg
	e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_Downloading, "",
		&protobufs.PackageDownloadDetails{}), false)
	first := true
	hdr := http.Header{}
	for _, h := range p.GetFile().GetHeaders().GetHeaders() {
		hdr.Add(h.GetKey(), h.GetValue())
	}
	staged := e.stagingFile(t.rec)
	// BLAKE2b-512 (the minisign pre-hash) only when a signature will be checked.
	prehash := len(p.GetFile().GetSignature()) > 0 && len(e.keys) > 0
	res, err := e.fetch.Fetch(ctx, download.Request{
		URL: p.GetFile().GetDownloadUrl(), Header: hdr, Dest: staged, Prehash: prehash,
		Progress: func(pr download.Progress) {
			if first && pr.Bytes > 0 {
				first = false
				e.crashPoint(cpDownloading)
			}
			pct := max(pr.Percent, 0)
			e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_Downloading, "",
				&protobufs.PackageDownloadDetails{DownloadPercent: pct, DownloadBytesPerSecond: pr.BytesPerSecond}), false)
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return faultNone, err
		}
		if errors.Is(err, download.ErrTooLarge) {
			return faultArtifact, fmt.Errorf("download: %w", err)
		}
		return faultTransient, fmt.Errorf("download: %w", err)
	}
	if err := t.step(cpDownloaded); err != nil {
		return faultTransient, err
	}
	if err := verify.SHA256(p.GetFile().GetContentHash(), res.SHA256); err != nil {
		return faultArtifact, fmt.Errorf("verify: %w", err)
	}
	sig := p.GetFile().GetSignature()
	switch {
	case len(sig) > 0 && len(e.keys) > 0:
		if err := verify.Signature(e.keys, sig, verify.Content{BLAKE2b512: res.BLAKE2b512, Path: staged}); err != nil {
			return faultArtifact, fmt.Errorf("verify: %w", err)
		}
	case e.o.RequireSignature:
		return faultArtifact, fmt.Errorf("verify: %w", verify.ErrNoSignature)
	default:
		e.log.Warn("installing an unverified package: no signature or no trusted key, and trust.require_signature is false",
			"package", t.rec.Package, "version", t.rec.Version)
	}
	if err := t.step(cpVerified); err != nil {
		return faultTransient, err
	}
	e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_Installing, "", nil), false)
	dir, err := unpack.Unpack(staged, filepath.Join(e.o.Root, "versions"), t.rec.NewDir, unpack.Options{
		Executable: e.o.Executable, MaxEntrySize: e.o.MaxPackageSize, MaxTotalSize: 2 * e.o.MaxPackageSize,
	})
	if err != nil {
		if errors.Is(err, syscallENOSPC) {
			return faultTransient, err
		}
		return faultArtifact, err
	}
	os.Remove(staged)
	if err := t.step(cpUnpacked); err != nil {
		return faultTransient, err
	}
	out, err := runVersion(ctx, filepath.Join(dir, e.o.Executable), []string{"--version"}, e.o.VersionCheckTimeout)
	if err == nil {
		err = checkVersion(out, t.rec.Version)
	}
	if err != nil {
		if ctx.Err() != nil {
			return faultNone, err
		}
		return faultArtifact, err
	}
	if err := t.step(cpVersionChecked); err != nil {
		return faultTransient, err
	}
	return faultTransient, nil
}

// fail ends a transaction that never activated: clean up, quarantine,
// report. The running collector was not touched.
func (t *txn) fail(ctx context.Context, stage string, err error, f fault) {
	e := t.e
	if f == faultNone || ctx.Err() != nil {
		e.log.Info("install interrupted by shutdown; the journal keeps it for the next start", "err", err)
		return
	}
	msg := err.Error()
	if stage != "" {
		msg = stage + ": " + msg
	}
	e.log.Warn("collector install failed before activation; the running collector was not touched",
		"package", t.rec.Package, "version", t.rec.Version, "err", msg)
	os.Remove(e.stagingFile(t.rec))
	if t.rec.NewDir != "" && t.rec.NewDir != t.rec.PrevDir {
		os.RemoveAll(e.versionDir(t.rec.NewDir) + ".tmp")
		os.RemoveAll(e.versionDir(t.rec.NewDir))
	}
	if qerr := e.quarantine(t.rec.Hash, t.rec.Version, msg, f == faultTransient); qerr != nil {
		e.log.Error("quarantine not recorded", "err", qerr)
	}
	if jerr := e.j.Clear(); jerr != nil {
		e.log.Error("journal not cleared", "err", jerr)
	}
	e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, msg, nil), true)
}

// activate stops the supervisor, switches current, starts it and gates on
// health; it commits or rolls back.
func (t *txn) activate(ctx context.Context) {
	e := t.e
	if err := t.step(cpActivating); err != nil {
		t.fail(ctx, "journal", err, faultTransient)
		return
	}
	if err := e.ctl.Stop(ctx); err != nil {
		// The old collector may still run: put things back as they were.
		if ctx.Err() != nil {
			return
		}
		t.rollback(ctx, fmt.Sprintf("stopping the supervisor failed: %v", err))
		return
	}
	if err := t.step(cpSupervisorStopped); err != nil {
		t.rollback(ctx, err.Error())
		return
	}
	if err := switchCurrent(e.o.Root, t.rec.NewDir, func() { e.crashPoint(cpLinkStaged) }); err != nil {
		t.rollback(ctx, fmt.Sprintf("switching %s/current: %v", e.o.Root, err))
		return
	}
	e.crashPoint(cpSwitched)
	if err := t.step(cpSwitchRecorded); err != nil {
		t.rollback(ctx, err.Error())
		return
	}
	t.startAndGate(ctx)
}

// startAndGate starts the supervisor on the new version and runs the health
// gate (also the recovery path after a crash past the switch).
func (t *txn) startAndGate(ctx context.Context) {
	e := t.e
	if e.ctl.PID() == 0 {
		if err := e.ctl.Start(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			t.rollback(ctx, fmt.Sprintf("starting the supervisor failed: %v", err))
			return
		}
	}
	if err := t.step(cpSupervisorStarted); err != nil {
		t.rollback(ctx, err.Error())
		return
	}
	if err := t.step(cpHealthGate); err != nil {
		t.rollback(ctx, err.Error())
		return
	}
	if err := e.waitStable(ctx, e.exeIn(t.rec.NewDir), e.o.HealthWindow, true); err != nil {
		if ctx.Err() != nil {
			return
		}
		t.rollback(ctx, err.Error())
		return
	}
	if err := t.step(cpHealthy); err != nil {
		e.log.Error("journal write failed after a healthy activation; committing anyway", "err", err)
	}
	t.commit()
}

// commit makes the new version the installed one. Idempotent.
func (t *txn) commit() {
	e := t.e
	in := &installed{Version: t.rec.Version, Hash: t.rec.Hash, Dir: t.rec.NewDir, OfferHash: t.rec.OfferHash}
	if err := writeJSON(e.statePath(installedFile), in); err != nil {
		e.log.Error("recording the installed version failed", "err", err)
	}
	e.crashPoint(cpInstalledRecorded)
	e.gc(t.rec.NewDir, t.rec.PrevDir)
	e.crashPoint(cpGarbageCollected)
	if err := e.j.Clear(); err != nil {
		e.log.Error("journal not cleared", "err", err)
	}
	e.crashPoint(cpCommitted)
	e.mu.Lock()
	e.inst = in
	e.mu.Unlock()
	e.log.Info("collector installed", "version", in.Version, "dir", in.Dir, "previous", t.rec.PrevDir)
	st := t.status(protobufs.PackageStatusEnum_PackageStatusEnum_Installed, "", nil)
	e.setStatus(st, true)
}

// rollback puts the previous version back. Idempotent: recovery re-runs it
// from the start after a crash anywhere inside it.
func (t *txn) rollback(ctx context.Context, reason string) {
	e := t.e
	if t.rec.Reason == "" {
		t.rec.Reason = reason
	}
	reason = t.rec.Reason
	log := e.log.With("package", t.rec.Package, "version", t.rec.Version, "txn", t.rec.ID)
	log.Warn("collector activation failed, rolling back", "reason", reason, "to", t.rec.PrevDir)
	if err := t.step(cpRollbackBegin); err != nil {
		log.Error("journal", "err", err)
	}
	if err := e.ctl.Stop(ctx); err != nil {
		log.Error("stopping the supervisor for the rollback failed", "err", err)
	}
	if err := t.step(cpRollbackStopped); err != nil {
		log.Error("journal", "err", err)
	}
	e.keepFailedLog(t.rec)
	if err := t.step(cpFailedLogKept); err != nil {
		log.Error("journal", "err", err)
	}
	var problems []string
	if t.rec.PrevDir != "" {
		if err := switchCurrent(e.o.Root, t.rec.PrevDir, func() { e.crashPoint(cpRollbackLinkStage) }); err != nil {
			problems = append(problems, fmt.Sprintf("switching back failed: %v", err))
		}
	} else {
		problems = append(problems, "no previous version to return to")
	}
	if err := t.step(cpRollbackSwitched); err != nil {
		log.Error("journal", "err", err)
	}
	if t.rec.PrevDir != "" {
		if err := e.ctl.Start(ctx); err != nil {
			problems = append(problems, fmt.Sprintf("restarting the supervisor failed: %v", err))
		}
	}
	if err := t.step(cpRollbackStarted); err != nil {
		log.Error("journal", "err", err)
	}
	if t.rec.PrevDir != "" && len(problems) == 0 {
		if err := e.waitStable(ctx, e.exeIn(t.rec.PrevDir), min(e.o.HealthWindow, 5*time.Second), false); err != nil {
			problems = append(problems, fmt.Sprintf("the previous collector did not come back: %v", err))
		}
	}
	if ctx.Err() != nil {
		return // shutdown: the journal replays the rollback at next start
	}
	if err := t.step(cpRollbackVerified); err != nil {
		log.Error("journal", "err", err)
	}
	if err := e.quarantine(t.rec.Hash, t.rec.Version, reason, false); err != nil {
		log.Error("quarantine not recorded", "err", err)
	}
	if err := t.step(cpQuarantined); err != nil {
		log.Error("journal", "err", err)
	}
	if t.rec.NewDir != t.rec.PrevDir {
		os.RemoveAll(e.versionDir(t.rec.NewDir))
	}
	os.Remove(e.stagingFile(t.rec))
	if err := e.j.Clear(); err != nil {
		log.Error("journal not cleared", "err", err)
	}
	if t.rec.PrevDir != "" && t.rec.PrevVersion != "" {
		e.mu.Lock()
		e.inst = &installed{Version: t.rec.PrevVersion, Hash: t.rec.PrevHash, Dir: t.rec.PrevDir}
		e.mu.Unlock()
	}
	prevName := t.rec.PrevVersion
	if prevName == "" {
		prevName = t.rec.PrevDir
	}
	msg := fmt.Sprintf("rolled back to %s: %s", prevName, reason)
	if len(problems) > 0 {
		msg += "; ROLLBACK PROBLEM: " + strings.Join(problems, "; ")
		log.Error("rollback incomplete", "problems", problems)
	} else {
		log.Warn("rolled back", "to", prevName)
	}
	e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, msg, nil), true)
}

// keepFailedLog copies the supervisor's agent.log (the failed collector's
// output, truncated at the next collector start) to
// state_dir/failed/<version>/, once.
func (e *Engine) keepFailedLog(rec *journal.Record) {
	dir := filepath.Join(e.o.StateDir, failedDir, rec.Version)
	dst := filepath.Join(dir, "agent.log")
	if _, err := os.Stat(dst); err == nil {
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		e.log.Warn("keeping the failed collector log", "err", err)
		return
	}
	os.WriteFile(filepath.Join(dir, "reason.txt"),
		[]byte(fmt.Sprintf("version %s (sha256 %s) rolled back at %s: %s\n", rec.Version, rec.Hash, time.Now().UTC().Format(time.RFC3339), rec.Reason)), 0o600)
	src, err := os.Open(filepath.Join(e.o.StorageDir, "agent.log"))
	if err != nil {
		e.log.Warn("no collector log to keep", "err", err)
		return
	}
	defer src.Close()
	// Keep at most the last 16 MiB.
	if st, err := src.Stat(); err == nil && st.Size() > 16<<20 {
		src.Seek(st.Size()-16<<20, io.SeekStart)
	}
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		e.log.Warn("keeping the failed collector log", "err", err)
		return
	}
	_, cerr := io.Copy(out, src)
	serr := out.Sync()
	out.Close()
	if cerr != nil || serr != nil {
		e.log.Warn("keeping the failed collector log", "err", errors.Join(cerr, serr))
		os.Remove(tmp)
		return
	}
	os.Rename(tmp, dst)
	journal.SyncDir(dir)
}

// gc keeps the current and previous version directories and removes every
// other one (and interrupted unpacks).
func (e *Engine) gc(keep ...string) {
	vdir := filepath.Join(e.o.Root, "versions")
	entries, err := os.ReadDir(vdir)
	if err != nil {
		return
	}
	for _, ent := range entries {
		name := ent.Name()
		kept := false
		for _, k := range keep {
			if k != "" && name == k {
				kept = true
			}
		}
		if kept {
			continue
		}
		if err := os.RemoveAll(filepath.Join(vdir, name)); err != nil {
			e.log.Warn("garbage collection", "dir", name, "err", err)
		}
	}
	staging := filepath.Join(e.o.StateDir, stagingDir)
	if ents, err := os.ReadDir(staging); err == nil {
		for _, ent := range ents {
			os.Remove(filepath.Join(staging, ent.Name()))
		}
	}
}
