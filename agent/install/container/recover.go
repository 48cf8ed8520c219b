package container

import (
	"context"
	"errors"
	"fmt"
	"slices"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/client"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// Recover replays an unfinished swap, reconciles the containers so that
// exactly one container named <name> runs, learns what image it runs, and
// starts the worker under ctx. Call it once, before offers arrive. An error
// is reported but the worker runs anyway (offers are then handled, and the
// next start tries the recovery again).
func (e *Engine) Recover(ctx context.Context) error {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return errors.New("container: Recover called twice")
	}
	wctx, cancel := context.WithCancel(ctx)
	e.started, e.cancel = true, cancel
	e.mu.Unlock()

	var errs []error
	if err := e.replay(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := e.reconcile(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := e.refreshImage(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := e.settleStatuses(); err != nil {
		errs = append(errs, err)
	}
	e.wg.Add(1)
	go e.worker(wctx)
	return errors.Join(errs...)
}

// replay finishes or rolls back the swap the journal records.
func (e *Engine) replay(ctx context.Context) error {
	rec, err := e.j.Load()
	if err != nil || rec == nil {
		return err
	}
	if rec.Kind != "container" {
		e.log.Warn("the journal holds a binary-mode transaction; container mode leaves it alone", "kind", rec.Kind, "step", rec.Step)
		return nil
	}
	e.crashPoint(cpRecoverBegin)
	t := &txn{e: e, rec: rec, log: e.log.With("version", rec.Version, "txn", rec.ID, "recovering", rec.Step)}
	if ok, err := readJSON(e.statePath(swapFile), &t.sw); err != nil {
		return err
	} else if !ok || t.sw.TxnID != rec.ID {
		// The swap file is written before any container changes
		// (creating-next); without it nothing was touched.
		t.sw = swapState{TxnID: rec.ID, OldID: rec.PrevDir, OldRunning: true, NewID: rec.NewDir}
	}
	t.log.Info("replaying an interrupted collector container swap")
	switch rec.Step {
	case cpAdmitted, cpImageReady, cpCreating, cpCreated, cpOldStopped:
		// The new container never ran: undo without blaming the image.
		if rec.Reason == "" {
			rec.Reason = "interrupted by an updater restart at step " + rec.Step
		}
		t.rollback(ctx, errors.New(rec.Reason), faultNone)
	case cpNextStarted:
		// It was started: judge it now.
		if err := e.healthGate(ctx, e.nextName(), t.sw.InstanceUID); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			t.rollback(ctx, fmt.Errorf("health gate after restart: %w", err), faultArtifact)
			return nil
		}
		if id := e.idOf(ctx, e.nextName()); id != "" {
			t.sw.NewID = id
		}
		t.finish(ctx)
	case cpHealthy, cpOldRemoved, cpRenamed:
		if t.sw.NewID == "" {
			t.sw.NewID = e.idOf(ctx, e.nextName())
		}
		t.finish(ctx)
	case cpRollbackBegin, cpNextRemoved, cpOldRestarted, cpQuarantined:
		t.rollback(ctx, errors.New(rec.Reason), faultArtifact)
	default:
		return fmt.Errorf("container: journal step %q unknown; leaving it for inspection in %s", rec.Step, e.j.Path())
	}
	return nil
}

func (e *Engine) idOf(ctx context.Context, name string) string {
	c, err := e.docker.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if err != nil {
		return ""
	}
	return c.Container.ID
}

// reconcile enforces "exactly one container named <name> runs" without a
// journal: a <name>-next left over next to <name> is removed (the proven
// container wins), a lone <name>-next takes the name.
func (e *Engine) reconcile(ctx context.Context) error {
	if rec, _ := e.j.Load(); rec != nil && rec.Kind == "container" {
		return nil // an unfinished rollback; the next start retries it
	}
	cur, curErr := e.docker.ContainerInspect(ctx, e.o.Name, client.ContainerInspectOptions{})
	next, nextErr := e.docker.ContainerInspect(ctx, e.nextName(), client.ContainerInspectOptions{})
	if curErr != nil && !cerrdefs.IsNotFound(curErr) {
		return fmt.Errorf("container: inspect %s: %w", e.o.Name, curErr)
	}
	if nextErr != nil && !cerrdefs.IsNotFound(nextErr) {
		return fmt.Errorf("container: inspect %s: %w", e.nextName(), nextErr)
	}
	switch {
	case nextErr == nil && curErr == nil:
		e.log.Warn("removing a leftover container from an interrupted swap", "leftover", e.nextName())
		if err := e.removeIfExists(ctx, next.Container.ID); err != nil {
			return err
		}
		if s := cur.Container.State; s != nil && !s.Running {
			return e.startAndConfirm(ctx, cur.Container.ID)
		}
	case nextErr == nil:
		e.log.Warn("the collector container is missing; the new one takes its name", "from", e.nextName())
		return e.renameNext(ctx, next.Container.ID)
	}
	return nil
}

// refreshImage learns what <name> runs.
func (e *Engine) refreshImage(ctx context.Context) error {
	c, err := e.docker.ContainerInspect(ctx, e.o.Name, client.ContainerInspectOptions{})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			e.setImage(nil)
			return fmt.Errorf("container: no container named %s", e.o.Name)
		}
		return fmt.Errorf("container: inspect %s: %w", e.o.Name, err)
	}
	img, err := e.docker.ImageInspect(ctx, c.Container.Image)
	if err != nil {
		return fmt.Errorf("container: inspect the image of %s: %w", e.o.Name, err)
	}
	info := ImageInfo{ID: img.ID, Ref: c.Container.Config.Image}
	if img.Config != nil {
		info.Version = img.Config.Labels[VersionLabel]
	}
	// The manifest digest of the reference the container names, if any.
	if ref, err := reference.ParseNormalizedNamed(info.Ref); err == nil {
		if d, ok := ref.(reference.Digested); ok {
			info.Digest = d.Digest().String()
		} else {
			for _, rd := range img.RepoDigests {
				if n, err := reference.ParseNormalizedNamed(rd); err == nil && n.Name() == ref.Name() {
					info.Digest = n.(reference.Digested).Digest().String()
				}
			}
		}
	}
	var inst ImageInfo
	if ok, _ := readJSON(e.statePath(installedFile), &inst); ok && inst.ID == info.ID {
		info.Hash, info.OfferHash = inst.Hash, inst.OfferHash
		if info.Digest == "" {
			info.Digest = inst.Digest
		}
	}
	e.setImage(&info)
	return nil
}

// settleStatuses loads the statuses persisted before the restart and turns
// a collector status left in progress (the updater stopped between the
// offer and the first journal step, or before a result was persisted) into
// a final one, so the server never sees an install stuck "in progress".
func (e *Engine) settleStatuses() error {
	last, err := e.LastStatuses()
	if err != nil || last == nil {
		return err
	}
	e.mu.Lock()
	e.allHash = slices.Clone(last.GetServerProvidedAllPackagesHash())
	for n, st := range last.GetPackages() {
		e.statuses[n] = st
	}
	st := e.statuses[e.o.Package]
	changed := false
	if st != nil {
		switch st.GetStatus() {
		case protobufs.PackageStatusEnum_PackageStatusEnum_Installed, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed:
		default:
			changed = true
			if e.image != nil && e.image.matchesOffered(st.GetServerOfferedHash()) {
				st.Status, st.ErrorMessage = protobufs.PackageStatusEnum_PackageStatusEnum_Installed, ""
			} else {
				st.Status = protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed
				st.ErrorMessage = "interrupted by an updater restart before the swap began; the collector container was not changed"
			}
			st.DownloadDetails = nil
			e.keepAgentHas(st)
		}
	}
	e.mu.Unlock()
	if changed {
		e.sendStatuses(true)
	}
	return nil
}
