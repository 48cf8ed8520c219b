package install

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/myriarch/myriarch/agent/journal"
)

// Recover must be called once, at start, before offers: it replays an
// interrupted transaction (finishing it when its new version started and
// passes the health gate, rolling it back or abandoning it otherwise), lets
// the back-ends make the host consistent, learns what runs, reports the
// resulting statuses, and starts the worker, which runs until ctx ends or
// Close. It blocks for the replay. Its error is reported, and the worker
// runs anyway (the next start tries the recovery again).
func (e *Engine) Recover(ctx context.Context) error {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return errors.New("install: Recover called twice")
	}
	e.started = true
	if last, err := e.LastStatuses(); err == nil && last != nil {
		for n, st := range last.GetPackages() {
			e.statuses[n] = st
		}
		e.allHash = slices.Clone(last.GetServerProvidedAllPackagesHash())
	}
	e.mu.Unlock()

	var errs []error
	errs = append(errs, e.refreshRunning(ctx))
	rec, err := e.pending()
	if err != nil {
		errs = append(errs, err)
	}
	if rec != nil {
		e.replay(ctx, rec)
	}
	for _, b := range e.order {
		if r, ok := b.Backend.(Reconciler); ok {
			errs = append(errs, r.Reconcile(ctx, err != nil))
		}
	}
	errs = append(errs, e.refreshRunning(ctx))
	if rec, _ := e.j.Load(); rec == nil {
		e.cleanStaging() // nothing is in flight
	}

	wctx, cancel := context.WithCancel(ctx)
	e.mu.Lock()
	e.settleLocked()
	e.cancel = cancel
	closed := e.closed
	e.mu.Unlock()
	e.publish(true)
	if !closed {
		e.wg.Add(1)
		go e.worker(wctx)
	}
	return errors.Join(errs...)
}

// pending returns the interrupted transaction: the journal's, or one a
// back-end adopts from an older updater. A journal that cannot be read
// cannot be replayed: it is removed and the back-ends' reconciliation
// makes sure what ran before runs.
func (e *Engine) pending() (*journal.Record, error) {
	rec, err := e.j.Load()
	if err != nil {
		e.j.Clear()
		return nil, err
	}
	if rec != nil {
		return rec, nil
	}
	for _, b := range e.order {
		if a, ok := b.Backend.(Adopter); ok {
			rec, err := a.Adopt()
			if err != nil || rec != nil {
				return rec, err
			}
		}
	}
	return nil, nil
}

// replay finishes, rolls back or abandons an interrupted transaction.
func (e *Engine) replay(ctx context.Context, rec *journal.Record) {
	var b *backend
	for _, c := range e.order {
		if c.desc.Kind == rec.Kind {
			b = c
		}
	}
	if b == nil {
		// Recorded in another mode (the updater's mode changed): what that
		// mode installed is not managed here, so there is nothing to do.
		e.log.Warn("the journal holds a transaction of another install mode; it is dropped", "kind", rec.Kind, "step", rec.Step, "version", rec.Version)
		e.j.Clear()
		return
	}
	t := e.txnFor(b, rec, nil)
	t.Reach(CPRecoverBegin)
	var res Resume
	switch rec.Step {
	case CPAdmitted, CPDownloaded, CPVerified:
		res = Abandon
	case CPHealthy:
		res = Commit
	case CPRollbackBegin, CPQuarantined:
		res = RollBack
	default:
		var err error
		if res, err = b.Recover(ctx, t); err != nil {
			t.log.Error("recovery cannot tell how to continue; the journal is kept for inspection", "journal", e.j.Path(), "err", err)
			return
		}
	}
	t.log.Warn("recovering an interrupted install", "step", rec.Step, "resume", res)
	switch res {
	case Abandon:
		e.abandon(ctx, t)
	case Gate:
		if lg, ok := b.Backend.(LiveGater); ok && lg.GatesLive() {
			e.mu.Lock()
			e.live = t
			e.running = &job{b: b, pkg: offeredBy(rec)}
			e.mu.Unlock()
			return // the worker runs the gate first
		}
		e.gateAndCommit(ctx, t)
	case Commit:
		e.commit(ctx, t)
	case RollBack:
		reason := rec.Reason
		if reason == "" {
			reason = "interrupted by an updater restart at step " + rec.Step
		}
		e.rollback(ctx, t, errors.New(reason), Artifact)
	}
}

// refreshRunning asks every back-end what runs.
func (e *Engine) refreshRunning(ctx context.Context) error {
	var errs []error
	for _, b := range e.order {
		in, err := b.Running(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("what %s runs: %w", b.desc.Package, err))
		}
		e.mu.Lock()
		b.installed = in
		e.mu.Unlock()
	}
	return errors.Join(errs...)
}

func (r Resume) String() string {
	switch r {
	case Gate:
		return "health gate"
	case Commit:
		return "commit"
	case RollBack:
		return "rollback"
	}
	return "abandon"
}
