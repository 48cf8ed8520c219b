package install

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/open-telemetry/opamp-go/protobufs"
)

// Status values, short.
const (
	stInstalled  = protobufs.PackageStatusEnum_PackageStatusEnum_Installed
	stInstalling = protobufs.PackageStatusEnum_PackageStatusEnum_Installing
	stFailed     = protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed
)

// run is one transaction: admission (again: the quarantine and what runs
// may have changed while the job was queued) → prepare → acquire → verify
// → stage and pre-activation check → activate → health gate → commit, or
// rollback. It reports whether the updater is restarting for a new version.
func (e *Engine) run(ctx context.Context, jb job) (restart bool) {
	t := e.newTxn(jb.b, jb.pkg)
	e.mu.Lock()
	_, err := e.admitLocked(jb.b.desc.Package, jb.pkg)
	prev := jb.b.installed
	e.mu.Unlock()
	if err != nil {
		e.setStatus(t.status(stFailed, err.Error(), nil), true)
		return false
	}
	t.rec.PrevVersion, t.rec.PrevHash = prev.Version, prev.Hash
	if rec, err := e.j.Load(); err != nil || rec != nil {
		msg := "an interrupted install is still unfinished; it is retried at the next updater start"
		if err != nil {
			msg = err.Error()
		}
		e.setStatus(t.status(stFailed, msg, nil), true)
		return false
	}
	if p, ok := jb.b.Backend.(Preparer); ok {
		done, err := p.Prepare(ctx, t)
		switch {
		case err != nil:
			e.fail(ctx, t, err)
			return false
		case done:
			e.mu.Lock()
			jb.b.installed = Installed{Version: t.rec.Version, Hash: t.rec.Hash, OfferHash: t.rec.OfferHash}
			e.mu.Unlock()
			e.setStatus(t.status(stInstalled, "", nil), true)
			return false
		}
	}
	if err := t.Step(CPAdmitted); err != nil {
		e.fail(ctx, t, Failf(Transient, "journal: %w", err))
		return false
	}
	t.log.Info("install started", "from", t.prevName())
	if err := e.acquire(ctx, t); err != nil {
		e.fail(ctx, t, err)
		return false
	}
	e.setStatus(t.status(stInstalling, "", nil), false)
	if err := t.b.Stage(ctx, t); err != nil {
		e.fail(ctx, t, err)
		return false
	}
	e.removeArtifact(t)
	e.confirmRunning(ctx, t, prev)
	err = t.b.Activate(ctx, t)
	switch {
	case errors.Is(err, ErrRestart):
		// Installing until the new version confirms itself at its next start.
		e.setStatus(t.status(stInstalling, "", nil), true)
		return true
	case err != nil && ctx.Err() != nil:
		return false // the journal keeps it for the next start
	case err != nil:
		e.rollback(ctx, t, err, FaultOf(err))
		return false
	}
	e.gateAndCommit(ctx, t)
	return false
}

// fail ends a transaction before its new version ran: what Stage made is
// removed, the hash is quarantined by the fault's class, InstallFailed is
// reported. Nothing running was touched. At shutdown the journal keeps the
// transaction for the next start instead.
func (e *Engine) fail(ctx context.Context, t *Txn, err error) {
	if ctx.Err() != nil {
		t.log.Info("install interrupted by shutdown; the next start ends it", "err", err)
		return
	}
	f := FaultOf(err)
	t.log.Warn("install failed before activation; what runs was not touched", "fault", f, "err", err)
	if t.rec.Step != "" {
		if aerr := t.b.Abandon(ctx, t); aerr != nil {
			t.log.Error("cleaning up after the failed install", "err", aerr)
		}
	}
	e.removeArtifact(t)
	e.quarantine(t, err.Error(), f)
	e.setStatus(t.status(stFailed, err.Error(), nil), true)
	e.clearJournal(t)
	e.finished(t, OutcomeFailed, f)
}

// gateAndCommit runs the health gate of an activated version, then commits
// or rolls back.
func (e *Engine) gateAndCommit(ctx context.Context, t *Txn) {
	if err := t.b.Gate(ctx, t); err != nil {
		if ctx.Err() != nil {
			return // the next start judges it again
		}
		e.rollback(ctx, t, err, Artifact)
		return
	}
	t.Mark(CPHealthy)
	e.commit(ctx, t)
}

// commit makes the new version, which passed the health gate, the
// installed one and records it as confirmed healthy. Idempotent: the next
// start repeats it when it is cut short.
func (e *Engine) commit(ctx context.Context, t *Txn) {
	e.recordConfirmed(t)
	if err := t.b.Commit(ctx, t); err != nil {
		t.log.Error("committing the installed version failed; the next updater start finishes it", "err", err)
		return
	}
	e.mu.Lock()
	t.b.installed = Installed{Version: t.rec.Version, Hash: t.rec.Hash, OfferHash: t.rec.OfferHash}
	e.mu.Unlock()
	// The result is persisted before the journal goes: a crash in between
	// replays the commit, which reports Installed again.
	e.setStatus(t.status(stInstalled, "", nil), true)
	e.clearJournal(t)
	e.removeArtifact(t)
	e.finished(t, OutcomeInstalled, Transient)
	t.Reach(CPCommitted)
	t.log.Info("installed", "previous", t.prevName())
}

// rollback puts back what ran before. Idempotent: the next start replays it
// from the start after a crash anywhere inside it.
func (e *Engine) rollback(ctx context.Context, t *Txn, cause error, f Fault) {
	if t.rec.Reason == "" {
		t.rec.Reason = cause.Error()
	}
	reason := t.rec.Reason
	t.log.Warn("activation failed; rolling back", "reason", reason, "to", t.prevName())
	t.Mark(CPRollbackBegin)
	err := t.b.Rollback(ctx, t)
	switch {
	case err != nil && (ctx.Err() != nil || isIncomplete(err)):
		// The next start tries again; the server hears why meanwhile.
		t.log.Error("rollback incomplete; the next updater start retries it", "err", err)
		if ctx.Err() == nil {
			e.setStatus(t.status(stFailed, reason+"; "+err.Error(), nil), true)
		}
		return
	}
	e.quarantine(t, reason, f)
	t.Mark(CPQuarantined)
	msg := fmt.Sprintf("rolled back to %s: %s", t.prevName(), reason)
	if err != nil {
		msg += "; ROLLBACK PROBLEM: " + err.Error()
		t.log.Error("rollback incomplete", "err", err)
	} else {
		t.log.Warn("rolled back", "to", t.prevName())
	}
	e.removeArtifact(t)
	e.restoredPrevious(t)
	e.setStatus(t.status(stFailed, msg, nil), true)
	e.clearJournal(t)
	e.finished(t, OutcomeRolledBack, f)
}

// restoredPrevious records that what ran before the transaction runs again
// (after a restart, the back-end may have seen the new version running).
func (e *Engine) restoredPrevious(t *Txn) {
	if t.rec.PrevVersion == "" {
		return
	}
	e.mu.Lock()
	t.b.installed = Installed{Version: t.rec.PrevVersion, Hash: t.rec.PrevHash}
	e.mu.Unlock()
}

// abandon ends a transaction a restart interrupted before its new version
// ran: what ran before stays (or is put back).
func (e *Engine) abandon(ctx context.Context, t *Txn) {
	err := t.b.Abandon(ctx, t)
	if ctx.Err() != nil {
		return
	}
	msg := fmt.Sprintf("interrupted at step %q by an updater restart; %s kept running", t.rec.Step, t.prevName())
	if err != nil {
		msg += "; RECOVERY PROBLEM: " + err.Error()
	}
	t.log.Warn("interrupted install abandoned", "step", t.rec.Step, "err", err)
	e.removeArtifact(t)
	// Transient: the same offer may be retried after a backoff (an install
	// that keeps killing the updater must not loop).
	e.quarantine(t, msg, Transient)
	e.restoredPrevious(t)
	e.setStatus(t.status(stFailed, msg, nil), true)
	e.clearJournal(t)
}

func (e *Engine) clearJournal(t *Txn) {
	if err := e.j.Clear(); err != nil {
		t.log.Error("journal not cleared", "err", err)
	}
}

// removeArtifact deletes the transaction's download, once it is no longer
// needed.
func (e *Engine) removeArtifact(t *Txn) {
	if err := os.Remove(e.stagingPath(t.rec.Hash)); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.log.Warn("removing the downloaded artifact", "err", err)
	}
}
