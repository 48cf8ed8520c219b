package binary

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/myriarch/myriarch/agent/install"
)

// Activate stops the supervisor, switches <root>/current to the new
// version and starts the supervisor again.
func (b *Backend) Activate(ctx context.Context, t *install.Txn) error {
	rec := t.Record()
	if err := t.Step(cpActivating); err != nil {
		return install.Failf(install.Transient, "journal: %w", err)
	}
	if err := b.ctl.Stop(ctx); err != nil {
		// The old collector may still run: the rollback puts things back.
		return install.Failf(install.Transient, "stopping the supervisor failed: %w", err)
	}
	if err := t.Step(cpSupervisorStopped); err != nil {
		return install.Failf(install.Transient, "journal: %w", err)
	}
	if err := switchCurrent(b.o.Root, rec.NewDir, func() { t.Reach(cpLinkStaged) }); err != nil {
		return install.Failf(install.Transient, "switching %s/current: %w", b.o.Root, err)
	}
	t.Reach(cpSwitched)
	if err := t.Step(cpSwitchRecorded); err != nil {
		return install.Failf(install.Transient, "journal: %w", err)
	}
	return b.start(ctx, t)
}

// start starts the supervisor on the new version (also after a restart
// that interrupted the activation past the switch).
func (b *Backend) start(ctx context.Context, t *install.Txn) error {
	if b.ctl.PID() == 0 {
		if err := b.ctl.Start(ctx); err != nil {
			return install.Failf(install.Artifact, "starting the supervisor failed: %w", err)
		}
	}
	if err := t.Step(cpSupervisorStarted); err != nil {
		return install.Failf(install.Transient, "journal: %w", err)
	}
	return nil
}

// Gate passes when the supervisor runs the new collector and that process
// stays up for the health window (and the supervisor's healthcheck
// endpoint, when configured, answers 200).
func (b *Backend) Gate(ctx context.Context, t *install.Txn) error {
	if err := t.Step(cpHealthGate); err != nil {
		return install.Failf(install.Transient, "journal: %w", err)
	}
	return b.waitStable(ctx, t.Record().NewDir, b.env.HealthWindow, true)
}

// Commit records the new version as installed and removes every version
// directory but the current and the previous one.
func (b *Backend) Commit(_ context.Context, t *install.Txn) error {
	rec := t.Record()
	in := &installed{Version: rec.Version, Hash: rec.Hash, Dir: rec.NewDir, OfferHash: rec.OfferHash}
	if err := writeInstalled(b.env.StateDir, in); err != nil {
		b.log.Error("recording the installed version failed", "err", err)
	}
	t.Reach(cpInstalledRecorded)
	b.gc(rec.NewDir, rec.PrevDir)
	t.Reach(cpGarbageCollected)
	return nil
}

// Rollback stops the supervisor, keeps the failed collector's log, switches
// current back, starts the supervisor and checks that the previous
// collector runs; then it removes the new version.
func (b *Backend) Rollback(ctx context.Context, t *install.Txn) error {
	rec := t.Record()
	if err := b.ctl.Stop(ctx); err != nil {
		b.log.Error("stopping the supervisor for the rollback failed", "err", err)
	}
	t.Mark(cpRollbackStopped)
	b.keepFailedLog(rec)
	t.Mark(cpFailedLogKept)
	var problems []string
	if rec.PrevDir != "" {
		if err := switchCurrent(b.o.Root, rec.PrevDir, func() { t.Reach(cpRollbackLinkStage) }); err != nil {
			problems = append(problems, fmt.Sprintf("switching back failed: %v", err))
		}
	} else {
		problems = append(problems, "no previous version to return to")
	}
	t.Mark(cpRollbackSwitched)
	if rec.PrevDir != "" {
		if err := b.ctl.Start(ctx); err != nil {
			problems = append(problems, fmt.Sprintf("restarting the supervisor failed: %v", err))
		}
	}
	t.Mark(cpRollbackStarted)
	if rec.PrevDir != "" && len(problems) == 0 {
		if err := b.waitStable(ctx, rec.PrevDir, min(b.env.HealthWindow, 5*time.Second), false); err != nil {
			problems = append(problems, fmt.Sprintf("the previous collector did not come back: %v", err))
		}
	}
	if ctx.Err() != nil {
		return ctx.Err() // shutdown: the next start replays the rollback
	}
	t.Mark(cpRollbackVerified)
	b.removeNew(rec.NewDir, rec.PrevDir)
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// Abandon removes the new version and makes sure the previous one runs:
// current is switched back and the supervisor started when an interrupted
// activation got that far, and then the previous collector must come up.
func (b *Backend) Abandon(ctx context.Context, t *install.Txn) error {
	rec := t.Record()
	var problems []string
	changed := false
	if cur, err := readCurrent(b.o.Root); err != nil {
		problems = append(problems, err.Error())
	} else if cur != rec.PrevDir && rec.PrevDir != "" {
		changed = true
		if err := switchCurrent(b.o.Root, rec.PrevDir, func() {}); err != nil {
			problems = append(problems, err.Error())
		}
	}
	b.removeNew(rec.NewDir, rec.PrevDir)
	if b.ctl.PID() == 0 && rec.PrevDir != "" {
		changed = true
		if err := b.ctl.Start(ctx); err != nil {
			problems = append(problems, fmt.Sprintf("starting the supervisor: %v", err))
		}
	}
	if changed && rec.PrevDir != "" && len(problems) == 0 {
		if err := b.waitStable(ctx, rec.PrevDir, min(b.env.HealthWindow, 5*time.Second), false); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// removeNew removes a new version directory (and an interrupted unpack of
// it), never the previous one.
func (b *Backend) removeNew(newDir, prevDir string) {
	if newDir == "" || newDir == prevDir {
		return
	}
	for _, d := range []string{b.versionDir(newDir) + ".tmp", b.versionDir(newDir)} {
		if err := os.RemoveAll(d); err != nil {
			b.log.Warn("removing a version directory", "dir", d, "err", err)
		}
	}
}
