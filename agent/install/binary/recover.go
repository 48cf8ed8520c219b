package binary

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/install/selfupdate"
	"github.com/myriarch/myriarch/agent/journal"
)

// phase groups journal steps by what recovery must do.
func phase(step string) string {
	switch step {
	case cpAdmitted, cpDownloaded, cpVerified, cpUnpacked, cpVersionChecked:
		return "prepare"
	case cpActivating, cpSupervisorStopped:
		return "activating"
	case cpSwitchRecorded, cpSupervisorStarted, cpHealthGate:
		return "activated"
	case cpHealthy:
		return "healthy"
	case cpRollbackBegin, cpRollbackStopped, cpFailedLogKept, cpRollbackSwitched, cpRollbackStarted, cpRollbackVerified, cpQuarantined:
		return "rollback"
	}
	return "unknown"
}

// Recover must be called once, at start, before Offer. It replays an
// interrupted collector transaction (finishing it when activation completed
// and the health gate passes, rolling back otherwise), confirms or rolls
// back a pending self-update, reports the resulting statuses and starts the
// worker, which runs until ctx ends or Close. It blocks for the replay
// (at most StartTimeout + HealthWindow + a rollback).
func (e *Engine) Recover(ctx context.Context) error {
	e.mu.Lock()
	started := e.ctx != nil
	e.mu.Unlock()
	if started {
		return errors.New("install: Recover called twice")
	}
	e.crashPoint(cpRecoverBegin)
	cleanupCurrentTemp(e.o.Root)
	e.refreshRunning(ctx)
	if prev, err := e.LastStatuses(); err == nil && prev != nil {
		e.mu.Lock()
		for n, st := range prev.GetPackages() {
			e.statuses[n] = st
		}
		e.allHash = prev.GetServerProvidedAllPackagesHash()
		e.mu.Unlock()
	}
	var errs []error
	rec, err := e.j.Load()
	if err != nil {
		// A corrupt journal cannot be replayed; make sure a collector runs.
		errs = append(errs, err)
		e.j.Clear()
		rec = nil
		if e.ctl.PID() == 0 {
			errs = append(errs, e.ctl.Start(ctx))
		}
	}
	if rec != nil && rec.Kind == "collector" {
		e.replay(ctx, rec)
		// What runs now may differ from what ran before the replay.
		e.refreshRunning(ctx)
	} else if rec != nil {
		e.j.Clear()
	}
	if e.self != nil {
		e.confirmSelf()
	}
	e.mu.Lock()
	if e.inst != nil {
		// A persisted Installed status for this very content is kept: it
		// names the latest offer of it (a re-offer of installed content
		// under a new offer hash is answered Installed without a new
		// install, so installed.json still has the first offer's hash).
		st, ok := e.statuses[e.o.Package]
		current := ok && e.inst.Hash != "" && st.Status == protobufs.PackageStatusEnum_PackageStatusEnum_Installed &&
			st.ServerOfferedVersion == e.inst.Version && hex.EncodeToString(st.AgentHasHash) == e.inst.Hash
		if !current && (!ok || st.Status != protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed) {
			e.statuses[e.o.Package] = &protobufs.PackageStatus{
				Name: e.o.Package, Status: protobufs.PackageStatusEnum_PackageStatusEnum_Installed,
				AgentHasVersion: e.inst.Version, AgentHasHash: unhex(e.inst.Hash),
				ServerOfferedVersion: e.inst.Version, ServerOfferedHash: unhex(e.inst.statusHash()),
			}
		}
	}
	// Anything still "in progress" from before the restart is over.
	for _, st := range e.statuses {
		switch st.Status {
		case protobufs.PackageStatusEnum_PackageStatusEnum_Downloading, protobufs.PackageStatusEnum_PackageStatusEnum_Installing,
			protobufs.PackageStatusEnum_PackageStatusEnum_InstallPending:
			st.Status = protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed
			st.ErrorMessage = "interrupted by an updater restart; offer again to retry"
			st.DownloadDetails = nil
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	e.ctx, e.cancel = wctx, cancel
	e.mu.Unlock()
	e.report(true)
	e.wg.Add(1)
	go e.worker(wctx)
	return errors.Join(errs...)
}

func (e *Engine) refreshRunning(ctx context.Context) {
	in, err := e.loadRunning(ctx)
	if err != nil {
		e.log.Warn("cannot tell which collector version runs", "err", err)
	}
	e.mu.Lock()
	e.inst = in
	e.mu.Unlock()
}

// loadRunning finds the installed collector: installed.json when it matches
// <root>/current, otherwise what `current/<exe> --version` says.
func (e *Engine) loadRunning(ctx context.Context) (*installed, error) {
	in, err := e.loadInstalled()
	cur, cerr := readCurrent(e.o.Root)
	if cerr != nil {
		return nil, cerr
	}
	if err == nil && in != nil && in.Dir == cur {
		return in, nil
	}
	if cur == "" {
		return nil, nil
	}
	out, err := runVersion(ctx, e.exeIn(cur), []string{"--version"}, e.o.VersionCheckTimeout)
	if err != nil {
		return nil, err
	}
	v := parseVersionOutput(out)
	if v == "" {
		return nil, fmt.Errorf("no version in `%s --version` output %q", e.exeIn(cur), clip(out))
	}
	hash, offer := "", ""
	if i := strings.LastIndex(cur, "-"); i > 0 && in != nil && strings.HasPrefix(in.Hash, cur[i+1:]) {
		hash, offer = in.Hash, in.OfferHash
	}
	return &installed{Version: v, Hash: hash, Dir: cur, OfferHash: offer}, nil
}

// replay finishes or rolls back an interrupted collector transaction.
func (e *Engine) replay(ctx context.Context, rec *journal.Record) {
	t := &txn{e: e, rec: rec}
	log := e.log.With("package", rec.Package, "version", rec.Version, "txn", rec.ID, "step", rec.Step)
	ph := phase(rec.Step)
	cur, err := readCurrent(e.o.Root)
	if err != nil {
		log.Error("recovery: unreadable current link", "err", err)
	}
	if ph == "activating" && cur == rec.NewDir {
		ph = "activated" // the crash hit after the switch, before the journal said so
	}
	log.Warn("recovering an interrupted install", "phase", ph, "current", cur)
	switch ph {
	case "activated":
		t.startAndGate(ctx)
	case "healthy":
		t.commit()
	case "rollback":
		t.rollback(ctx, rec.Reason)
	default: // prepare, activating, unknown: nothing new ever ran
		t.abandon(ctx, cur)
	}
}

// abandon ends a transaction interrupted before the new version ran: the
// previous version stays (or is put back) and runs.
func (t *txn) abandon(ctx context.Context, cur string) {
	e, rec := t.e, t.rec
	var problems []string
	if cur != rec.PrevDir && rec.PrevDir != "" {
		if err := switchCurrent(e.o.Root, rec.PrevDir, func() {}); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if rec.NewDir != "" && rec.NewDir != rec.PrevDir {
		os.RemoveAll(e.versionDir(rec.NewDir) + ".tmp")
		os.RemoveAll(e.versionDir(rec.NewDir))
	}
	os.Remove(e.stagingFile(rec))
	os.RemoveAll(filepath.Join(e.o.StateDir, stagingDir, ".tmp"))
	if e.ctl.PID() == 0 && rec.PrevDir != "" {
		if err := e.ctl.Start(ctx); err != nil {
			problems = append(problems, fmt.Sprintf("starting the supervisor: %v", err))
		}
	}
	if rec.PrevDir != "" && len(problems) == 0 {
		if err := e.waitStable(ctx, e.exeIn(rec.PrevDir), min(e.o.HealthWindow, 5e9), false); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if ctx.Err() != nil {
		return
	}
	msg := fmt.Sprintf("interrupted at step %q by an updater restart; version %s kept running", rec.Step, rec.PrevVersion)
	if len(problems) > 0 {
		msg += "; RECOVERY PROBLEM: " + strings.Join(problems, "; ")
	}
	// Transient: the same offer may be retried after a backoff (an install
	// that keeps killing the updater must not loop).
	if err := e.quarantine(rec.Hash, rec.Version, msg, true); err != nil {
		e.log.Error("quarantine not recorded", "err", err)
	}
	if err := e.j.Clear(); err != nil {
		e.log.Error("journal not cleared", "err", err)
	}
	e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, msg, nil), true)
}

// confirmSelf confirms or rolls back a pending self-update.
func (e *Engine) confirmSelf() {
	res, err := e.self.Confirm(e.o.UpdaterVersion)
	if err != nil {
		e.log.Error("self-update confirmation failed", "err", err)
		return
	}
	switch res.Outcome {
	case selfupdate.Confirmed:
		e.log.Info("self-update confirmed", "version", res.Pending.To, "from", res.Pending.From)
		e.mu.Lock()
		e.statuses[SelfPackage] = &protobufs.PackageStatus{
			Name: SelfPackage, Status: protobufs.PackageStatusEnum_PackageStatusEnum_Installed,
			AgentHasVersion: res.Pending.To, AgentHasHash: unhex(res.Pending.Hash),
			ServerOfferedVersion: res.Pending.To, ServerOfferedHash: unhex(res.Pending.StatusHash()),
		}
		e.mu.Unlock()
	case selfupdate.RolledBack:
		e.log.Error("self-update rolled back", "reason", res.Reason)
		if err := e.quarantine(res.Pending.Hash, res.Pending.To, res.Reason, false); err != nil {
			e.log.Error("quarantine not recorded", "err", err)
		}
		e.mu.Lock()
		e.statuses[SelfPackage] = &protobufs.PackageStatus{
			Name: SelfPackage, Status: protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed,
			AgentHasVersion: res.Pending.From, ServerOfferedVersion: res.Pending.To, ServerOfferedHash: unhex(res.Pending.StatusHash()),
			ErrorMessage: "rolled back: " + res.Reason,
		}
		e.mu.Unlock()
		// The restored binary runs at the next start.
		e.o.RequestRestart("self-update rolled back: " + res.Reason)
	}
}
