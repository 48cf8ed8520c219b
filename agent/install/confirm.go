package install

import (
	"context"

	"github.com/myriarch/myriarch/agent/confirmed"
)

// confirmedStore is the engine's record of the versions this host
// confirmed healthy. Built per use: it holds no state.
func (e *Engine) confirmedStore() *confirmed.Store {
	return confirmed.New(e.statePath(e.o.StatePrefix+confirmed.File), e.log)
}

// recordConfirmed remembers that the transaction's version passed the
// health gate; a failure to do so is logged (going back to the version
// then needs trust.allow_downgrade).
func (e *Engine) recordConfirmed(t *Txn) {
	if err := e.confirmedStore().Record(t.rec.Package, t.rec.Version, t.rec.Hash); err != nil {
		t.log.Error("the confirmed version was not recorded", "err", err)
	}
}

// confirmRunning judges what runs before the transaction replaces it, when
// the back-end can (RunningConfirmer) and the version is not confirmed
// yet (it was found running, installed by something else than the
// updater): one that passes is recorded as confirmed, so the host may go
// back to it. Whatever the outcome, the transaction goes on.
func (e *Engine) confirmRunning(ctx context.Context, t *Txn, prev Installed) {
	c, ok := t.b.Backend.(RunningConfirmer)
	if !ok || prev.Version == "" {
		return
	}
	store := e.confirmedStore()
	if store.Has(t.rec.Package, prev.Version) {
		return
	}
	if err := c.ConfirmRunning(ctx); err != nil {
		if ctx.Err() == nil {
			t.log.Warn("the version that runs was not confirmed healthy; going back to it will need trust.allow_downgrade",
				"running", prev.Version, "err", err)
		}
		return
	}
	if err := store.Record(t.rec.Package, prev.Version, prev.Hash); err != nil {
		t.log.Error("the confirmed version was not recorded", "running", prev.Version, "err", err)
		return
	}
	t.log.Info("the version that runs is confirmed healthy", "running", prev.Version)
}
