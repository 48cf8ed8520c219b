package selfupdate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/hashicorp/go-version"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/journal"
	"github.com/myriarch/myriarch/agent/unpack"
	"github.com/myriarch/myriarch/agent/verify"
)

// Kind names self-update transactions in the journal.
const Kind = "self"

// The back-end's own crash points (journal steps).
const (
	cpUnpacked       = "unpacked"
	cpVersionChecked = "version-checked"
	cpActivating     = "activating"
	cpApplied        = "applied"
	cpRestored       = "restored"
)

// CrashPoints lists every crash point of a self-update, in order, with
// what recovery from each keeps.
var CrashPoints = install.CrashPoints(
	[]install.CrashPoint{{Name: cpUnpacked}, {Name: cpVersionChecked}, {Name: cpActivating}, {Name: cpApplied, KeepsNew: true}},
	nil,
	[]install.CrashPoint{{Name: cpRestored, Path: install.OnRollback}},
)

// Options configure the self-update back-end.
type Options struct {
	// Version is the running updater's version (buildinfo.Version).
	Version string
	// Executable is the updater binary to replace ("" = os.Executable()).
	Executable string
	// VersionArgs are passed to a new binary before it is installed; its
	// output must name the offered version (default --version).
	VersionArgs []string
	// RequestRestart is called when the updater must exit (non-zero) so
	// that the service manager starts the binary now in place: after the
	// new one was applied, and after a rollback restored the old one.
	RequestRestart func(reason string)
	// StableFor is how long the new updater must run after the restart
	// into it before the update is confirmed (default 1 min).
	StableFor time.Duration
	// MaxStarts is how many starts of the new binary may fail to get
	// there (it crashed, or was stopped) before it is rolled back
	// (default 3).
	MaxStarts int
}

// Validate reports every invalid option.
func (o Options) Validate() error {
	var errs []error
	if _, err := version.NewVersion(o.Version); err != nil {
		errs = append(errs, fmt.Errorf("updater version %q: %w", o.Version, err))
	}
	if o.StableFor < 0 || o.MaxStarts < 0 {
		errs = append(errs, fmt.Errorf("self-update: stable-for %s and max starts %d must not be negative", o.StableFor, o.MaxStarts))
	}
	if o.RequestRestart == nil {
		errs = append(errs, errors.New("self-update: a restart request function is required"))
	}
	return errors.Join(errs...)
}

// Backend replaces the updater's own binary.
type Backend struct {
	o         Options
	u         *Updater
	env       install.Env
	log       *slog.Logger
	committed install.Installed // what this process committed, for its hash
	started   time.Time         // when this updater started (NewBackend)
}

var _ install.Backend = (*Backend)(nil)

// NewBackend checks opts and returns the back-end.
func NewBackend(opts Options) (*Backend, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.VersionArgs == nil {
		opts.VersionArgs = []string{"--version"}
	}
	if opts.StableFor == 0 {
		opts.StableFor = time.Minute
	}
	if opts.MaxStarts == 0 {
		opts.MaxStarts = 3
	}
	return &Backend{o: opts, log: slog.New(slog.DiscardHandler), started: time.Now()}, nil
}

// Provision implements install.Provisioner.
func (b *Backend) Provision(env install.Env) error {
	u, err := New(b.o.Executable, env.StateDir)
	if err != nil {
		return err
	}
	b.u, b.env, b.log = u, env, env.Log
	return nil
}

// Describe implements install.Backend: the running updater is known by its
// version (its hash is not).
func (b *Backend) Describe() install.Description {
	return install.Description{Package: install.SelfPackage, Type: protobufs.PackageType_PackageType_TopLevel,
		Kind: Kind, CrashPoints: CrashPoints, ByVersion: true}
}

// Running implements install.Backend.
func (b *Backend) Running(context.Context) (install.Installed, error) {
	if b.committed.Version != "" && install.SameVersion(b.committed.Version, b.o.Version) {
		return b.committed, nil
	}
	return install.Installed{Version: b.o.Version}, nil
}

func exeName() string {
	if runtime.GOOS == "windows" {
		return install.SelfPackage + ".exe"
	}
	return install.SelfPackage
}

func helperName() string {
	if runtime.GOOS == "windows" {
		return verify.SigstoreHelperName + ".exe"
	}
	return verify.SigstoreHelperName
}

// stagedHelper is the Sigstore verifier the unpacked package carries, ""
// when it carries none.
func stagedHelper(dir string) string {
	p := filepath.Join(dir, helperName())
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		return p
	}
	return ""
}

func (b *Backend) stageDir(rec *journal.Record) string {
	return filepath.Join(b.env.StateDir, install.StagingDir, "self-"+rec.Hash[:16])
}

// Stage unpacks the new binary into the staging directory and checks that
// it runs and names the offered version.
func (b *Backend) Stage(ctx context.Context, t *install.Txn) error {
	rec := t.Record()
	stage := b.stageDir(rec)
	dir, err := unpack.Unpack(t.Artifact(), filepath.Dir(stage), filepath.Base(stage), unpack.Options{
		Executable: exeName(), MaxEntrySize: b.env.MaxPackageSize, MaxTotalSize: 2 * b.env.MaxPackageSize,
	})
	if err != nil {
		return install.Fail(install.Artifact, err)
	}
	if err := t.Step(cpUnpacked); err != nil {
		return install.Failf(install.Transient, "journal: %w", err)
	}
	if err := install.CheckExecutable(ctx, filepath.Join(dir, exeName()), b.o.VersionArgs, rec.Version, b.env.VersionCheckTimeout); err != nil {
		return install.Fail(install.Artifact, err)
	}
	// A package that carries the Sigstore verifier replaces it too: it must
	// be of the same version.
	if helper := stagedHelper(dir); helper != "" {
		if err := install.CheckExecutable(ctx, helper, b.o.VersionArgs, rec.Version, b.env.VersionCheckTimeout); err != nil {
			return install.Failf(install.Artifact, "%s: %w", helperName(), err)
		}
	}
	if err := t.Step(cpVersionChecked); err != nil {
		return install.Failf(install.Transient, "journal: %w", err)
	}
	return nil
}

// Activate swaps the binary and asks for the restart that runs it.
func (b *Backend) Activate(_ context.Context, t *install.Txn) error {
	rec := t.Record()
	if err := t.Step(cpActivating); err != nil {
		return install.Failf(install.Transient, "journal: %w", err)
	}
	newExe := filepath.Join(b.stageDir(rec), exeName())
	if err := b.u.Apply(newExe, stagedHelper(b.stageDir(rec)), b.o.Version, rec.Version, rec.Hash, rec.OfferHash); err != nil {
		return install.Fail(install.Transient, err)
	}
	b.removeStage(rec)
	if err := t.Step(cpApplied); err != nil {
		b.log.Error("journal not written after the binary was replaced; the marker confirms it at the next start", "err", err)
	}
	b.log.Info("updater binary replaced; restarting", "from", b.o.Version, "to", rec.Version)
	b.o.RequestRestart(fmt.Sprintf("self-update to %s", rec.Version))
	return install.ErrRestart
}

// GatesLive implements install.LiveGater: the new updater is judged while
// it runs.
func (b *Backend) GatesLive() bool { return true }

// Gate runs from the start after the swap, beside the running updater: it
// must report the offered version, not be a binary that keeps being
// restarted, and stay up StableFor.
func (b *Backend) Gate(ctx context.Context, t *install.Txn) error {
	rec := t.Record()
	if !install.SameVersion(b.o.Version, rec.Version) {
		return install.Failf(install.Artifact, "after the update the running updater reports version %q, expected %q", b.o.Version, rec.Version)
	}
	if p, err := b.u.Pending(); err == nil && p != nil && p.Starts > b.o.MaxStarts {
		return install.Failf(install.Artifact, "the new updater %s was started %d times without staying up %s (it crashes or is stopped)",
			rec.Version, p.Starts, b.o.StableFor)
	}
	wait := time.NewTimer(b.o.StableFor - time.Since(b.started))
	defer wait.Stop()
	select {
	case <-wait.C:
		return nil
	case <-ctx.Done():
		return ctx.Err() // judged again at the next start
	}
}

// Commit forgets the pending marker: the new binary stays.
func (b *Backend) Commit(_ context.Context, t *install.Txn) error {
	rec := t.Record()
	if err := b.u.Finish(); err != nil {
		return err
	}
	b.committed = install.Installed{Version: rec.Version, Hash: rec.Hash, OfferHash: rec.OfferHash}
	b.log.Info("self-update confirmed", "version", rec.Version, "from", rec.PrevVersion)
	return nil
}

// Rollback puts the saved binary back; when the running process is not the
// old updater, it asks for the restart that runs the old one again.
func (b *Backend) Rollback(_ context.Context, t *install.Txn) error {
	rec := t.Record()
	saved, err := b.u.Restore()
	if err != nil {
		return err
	}
	t.Mark(cpRestored)
	b.removeStage(rec)
	if err := b.u.Finish(); err != nil {
		return err
	}
	if rec.PrevVersion != "" && !install.SameVersion(b.o.Version, rec.PrevVersion) {
		b.log.Error("self-update rolled back; restarting into the restored binary", "reason", rec.Reason)
		b.o.RequestRestart("self-update rolled back: " + rec.Reason)
	}
	if !saved && !install.SameVersion(b.o.Version, rec.PrevVersion) {
		return fmt.Errorf("no saved binary of %s to restore", rec.PrevVersion)
	}
	return nil
}

// Abandon removes the staged binary; nothing was replaced.
func (b *Backend) Abandon(_ context.Context, t *install.Txn) error {
	b.removeStage(t.Record())
	return nil
}

// Recover implements install.Backend: before the swap there is nothing to
// undo; once the marker exists, the binary in place is judged by the
// version the restarted updater reports.
func (b *Backend) Recover(_ context.Context, t *install.Txn) (install.Resume, error) {
	switch t.Record().Step {
	case cpUnpacked, cpVersionChecked:
		return install.Abandon, nil
	case cpActivating:
		if p, err := b.u.Pending(); err != nil || p == nil {
			return install.Abandon, nil
		}
		b.countStart()
		return install.Gate, nil
	case cpApplied:
		b.countStart()
		return install.Gate, nil
	case cpRestored:
		return install.RollBack, nil
	}
	return 0, fmt.Errorf("selfupdate: unknown journal step %q", t.Record().Step)
}

// Adopt implements install.Adopter: a binary swapped by an updater that
// kept no journal for it (only the pending marker) is confirmed or rolled
// back like one swapped with a journal.
func (b *Backend) Adopt() (*journal.Record, error) {
	p, err := b.u.Pending()
	if err != nil || p == nil {
		return nil, err
	}
	return &journal.Record{ID: "adopted", Kind: Kind, Package: install.SelfPackage, Version: p.To, Hash: p.Hash,
		OfferHash: p.OfferHash, Step: cpApplied, PrevVersion: p.From, Started: p.Applied}, nil
}

// countStart records this start of a binary that is being judged.
func (b *Backend) countStart() {
	if n, err := b.u.CountStart(); err != nil {
		b.log.Warn("the start of the new updater is not counted", "err", err)
	} else if n > 1 {
		b.log.Warn("the new updater starts again before its self-update was confirmed", "starts", n, "rolled back after", b.o.MaxStarts)
	}
}

func (b *Backend) removeStage(rec *journal.Record) {
	if err := os.RemoveAll(b.stageDir(rec)); err != nil {
		b.log.Warn("removing the staged binary", "err", err)
	}
}
