package binary

import (
	"context"
	"fmt"
	"strings"

	"github.com/myriarch/myriarch/agent/install"
)

// Recover decides how a transaction interrupted at one of the back-end's
// steps continues: before the switch it is abandoned (unless current
// already points at the new version: the crash came between the switch
// and its journal step); after it the supervisor is started if needed and
// the new version judged; inside a rollback, the rollback is finished.
func (b *Backend) Recover(ctx context.Context, t *install.Txn) (install.Resume, error) {
	rec := t.Record()
	switch rec.Step {
	case cpUnpacked, cpVersionChecked:
		return install.Abandon, nil
	case cpActivating, cpSupervisorStopped:
		cur, err := readCurrent(b.o.Root)
		if err != nil || cur != rec.NewDir {
			return install.Abandon, nil
		}
	case cpSwitchRecorded, cpSupervisorStarted, cpHealthGate:
	case cpRollbackStopped, cpFailedLogKept, cpRollbackSwitched, cpRollbackStarted, cpRollbackVerified:
		return install.RollBack, nil
	default:
		return 0, fmt.Errorf("binary: unknown journal step %q", rec.Step)
	}
	// Activated: the supervisor must run the new version to be judged.
	if err := b.start(ctx, t); err != nil {
		if rec.Reason == "" {
			rec.Reason = err.Error()
		}
		return install.RollBack, nil
	}
	return install.Gate, nil
}

// Reconcile removes what an interrupted switch left, and starts the
// supervisor when a lost journal may have left it stopped.
func (b *Backend) Reconcile(ctx context.Context, lost bool) error {
	cleanupCurrentTemp(b.o.Root)
	if lost && b.ctl.PID() == 0 {
		return b.ctl.Start(ctx)
	}
	return nil
}

// Running implements install.Backend: the installed record when it matches
// <root>/current, otherwise what `current/<exe> --version` says.
func (b *Backend) Running(ctx context.Context) (install.Installed, error) {
	in, err := b.running(ctx)
	if err != nil || in == nil {
		return install.Installed{}, err
	}
	return install.Installed{Version: in.Version, Hash: in.Hash, OfferHash: in.OfferHash}, nil
}

func (b *Backend) running(ctx context.Context) (*installed, error) {
	in, err := readInstalled(b.env.StateDir)
	cur, cerr := readCurrent(b.o.Root)
	if cerr != nil {
		return nil, cerr
	}
	if err == nil && in != nil && in.Dir == cur {
		return in, nil
	}
	if cur == "" {
		return nil, nil
	}
	out, err := install.RunVersion(ctx, b.exeIn(cur), []string{"--version"}, b.env.VersionCheckTimeout)
	if err != nil {
		return nil, err
	}
	v := install.ParseVersion(out)
	if v == "" {
		return nil, fmt.Errorf("no version in `%s --version` output %q", b.exeIn(cur), install.Clip(out))
	}
	hash, offer := "", ""
	if i := strings.LastIndex(cur, "-"); i > 0 && in != nil && strings.HasPrefix(in.Hash, cur[i+1:]) {
		hash, offer = in.Hash, in.OfferHash
	}
	return &installed{Version: v, Hash: hash, Dir: cur, OfferHash: offer}, nil
}
