package container

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/admission"
	"github.com/myriarch/myriarch/agent/journal"
)

// txn is one running swap.
type txn struct {
	e   *Engine
	rec *journal.Record
	pkg *protobufs.PackageAvailable
	src source
	sw  swapState
	log *slog.Logger
}

// step durably records a completed step, then passes its crash point.
func (t *txn) step(point string) error {
	if err := t.e.j.Save(t.rec, point); err != nil {
		return err
	}
	t.e.crashPoint(point)
	return nil
}

func (t *txn) saveSwap() error { return writeJSON(t.e.statePath(swapFile), t.sw) }

func (t *txn) status(s protobufs.PackageStatusEnum, msg string, details *protobufs.PackageDownloadDetails) *protobufs.PackageStatus {
	return &protobufs.PackageStatus{
		Name: t.rec.Package, ServerOfferedVersion: t.rec.Version, ServerOfferedHash: unhex(t.rec.StatusHash()),
		Status: s, ErrorMessage: msg, DownloadDetails: details,
	}
}

func (e *Engine) nextName() string { return e.o.Name + NextSuffix }

// install runs one swap to its end: Installed, or InstallFailed with the
// old container running as before.
func (e *Engine) install(ctx context.Context, p *protobufs.PackageAvailable) {
	t := &txn{e: e, pkg: p, rec: &journal.Record{
		ID: strconv.FormatInt(time.Now().UnixNano(), 36), Kind: "container", Package: e.o.Package,
		Version: p.GetVersion(), Hash: admission.HexHash(p), OfferHash: hex.EncodeToString(p.GetHash()),
		Started: time.Now().UTC(),
	}}
	t.log = e.log.With("version", p.GetVersion(), "txn", t.rec.ID)
	fail := func(err error) {
		t.log.Warn("collector image install refused or failed; nothing was changed", "err", err)
		if f := faultOf(ctx, err); f != faultNone {
			// A refusal is about the container, not the image: nothing is
			// quarantined, and a re-offer is refused again cheaply (before
			// any download) until the container changes.
			if f != faultRefused {
				if qerr := e.quarantine(t.rec.Hash, t.rec.Version, err.Error(), f == faultTransient); qerr != nil {
					t.log.Warn("quarantine failed", "err", qerr)
				}
			}
			e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, err.Error(), nil), true)
		}
		if t.rec.Step != "" {
			if err := e.j.Clear(); err != nil {
				t.log.Error("clearing the journal failed", "err", err)
			}
		}
	}

	// Admission again: the quarantine or the running version may have changed.
	e.mu.Lock()
	src, err := e.admit(e.o.Package, p)
	if e.image != nil {
		t.rec.PrevVersion, t.rec.PrevHash = e.image.Version, e.image.Hash
	}
	e.mu.Unlock()
	if err != nil {
		e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, err.Error(), nil), true)
		return
	}
	t.src = src
	if rec, err := e.j.Load(); err != nil || rec != nil {
		msg := "an interrupted swap is still unfinished; it is retried at the next updater start"
		if err != nil {
			msg = err.Error()
		}
		e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, msg, nil), true)
		return
	}
	old, err := e.docker.ContainerInspect(ctx, e.o.Name, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		fail(&failure{faultRefused, fmt.Errorf("there is no container named %s to upgrade (container.name)", e.o.Name)})
		return
	}
	if err != nil {
		fail(transient("inspect container %s: %v", e.o.Name, err))
		return
	}
	oldCfg, oldHost, err := rawSections(old.Raw)
	if err != nil {
		fail(transient("inspect container %s: %v", e.o.Name, err))
		return
	}
	oldImg, err := e.docker.ImageInspect(ctx, old.Container.Image)
	if err != nil {
		fail(transient("inspect the image of %s: %v", e.o.Name, err))
		return
	}
	// Refuse what cannot be reproduced before downloading anything.
	if _, err := reproduce(old.Container, oldCfg, oldHost, oldImg.Config, "probe", e.o.StorageDir); err != nil {
		fail(&failure{faultRefused, err})
		return
	}
	// A leftover <name>-next (no journal: Recover ran) is garbage.
	if err := e.removeIfExists(ctx, e.nextName()); err != nil {
		fail(transient("remove leftover %s: %v", e.nextName(), err))
		return
	}
	t.rec.PrevDir = old.Container.ID
	t.sw = swapState{TxnID: t.rec.ID, OldID: old.Container.ID, OldRunning: old.Container.State != nil && old.Container.State.Running,
		OldRestart: old.Container.HostConfig.RestartPolicy}
	if err := t.saveSwap(); err != nil {
		fail(transient("state: %v", err))
		return
	}
	if err := t.step(cpAdmitted); err != nil {
		fail(transient("journal: %v", err))
		return
	}
	t.log.Info("collector image install started", "from", t.rec.PrevVersion)

	info, err := t.prepareImage(ctx)
	if err != nil {
		fail(err)
		return
	}
	info.OfferHash = t.rec.OfferHash
	t.sw.Image = info
	if err := t.step(cpImageReady); err != nil {
		fail(transient("journal: %v", err))
		return
	}
	e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_Installing, "", nil), false)
	spec, err := reproduce(old.Container, oldCfg, oldHost, oldImg.Config, info.Ref, e.o.StorageDir)
	if err != nil {
		fail(&failure{faultRefused, err})
		return
	}
	if e.o.StorageDir != "" && t.sw.OldRunning {
		uid, err := e.instanceUID(ctx, old.Container.ID)
		if err != nil {
			t.log.Warn("no supervisor instance UID to carry over yet", "err", err)
		}
		t.sw.InstanceUID = uid
	}
	if err := t.saveSwap(); err != nil {
		fail(transient("state: %v", err))
		return
	}
	if err := t.step(cpCreating); err != nil {
		fail(transient("journal: %v", err))
		return
	}
	created, err := e.docker.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: e.nextName(), Config: spec.Config, HostConfig: spec.Host, NetworkingConfig: spec.Network,
	})
	if err != nil {
		fail(&failure{faultTransient, fmt.Errorf("create %s: %w", e.nextName(), err)})
		return
	}
	t.rec.NewDir, t.sw.NewID = created.ID, created.ID
	if err := t.saveSwap(); err == nil {
		err = t.step(cpCreated)
	}
	if err != nil {
		_ = e.removeIfExists(context.WithoutCancel(ctx), created.ID)
		fail(transient("journal: %v", err))
		return
	}
	nw, err := e.docker.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{})
	if err == nil {
		var newHost json.RawMessage
		if _, newHost, err = rawSections(nw.Raw); err == nil {
			if err = verifyCreated(oldHost, newHost, spec.AddedMounts); err != nil {
				err = &failure{faultRefused, err}
			}
		}
	}
	if err != nil {
		if rerr := e.removeIfExists(context.WithoutCancel(ctx), created.ID); rerr != nil {
			err = errors.Join(err, rerr)
		}
		fail(err)
		return
	}

	// From here the running collector is touched.
	if restarts(t.sw.OldRestart) {
		if _, err := e.docker.ContainerUpdate(ctx, old.Container.ID, client.ContainerUpdateOptions{
			RestartPolicy: &container.RestartPolicy{Name: container.RestartPolicyDisabled}}); err != nil {
			t.rollback(ctx, fmt.Errorf("disable the restart policy of %s while it is kept stopped: %w", e.o.Name, err), faultTransient)
			return
		}
	}
	stopAt := time.Now()
	if t.sw.OldRunning {
		if _, err := e.docker.ContainerStop(ctx, old.Container.ID, client.ContainerStopOptions{}); err != nil {
			t.rollback(ctx, fmt.Errorf("stop %s: %w", e.o.Name, err), faultTransient)
			return
		}
	}
	if err := t.step(cpOldStopped); err != nil {
		t.rollback(ctx, fmt.Errorf("journal: %w", err), faultTransient)
		return
	}
	startAt := time.Now()
	if _, err := e.docker.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.rollback(ctx, fmt.Errorf("start %s: %w", e.nextName(), err), faultArtifact)
		return
	}
	t.log.Info("new container started", "old_stopped_in", startAt.Sub(stopAt).Round(time.Millisecond), "started_in", time.Since(startAt).Round(time.Millisecond))
	if err := t.step(cpNextStarted); err != nil {
		t.rollback(ctx, fmt.Errorf("journal: %w", err), faultTransient)
		return
	}
	if err := e.healthGate(ctx, created.ID, t.sw.InstanceUID); err != nil {
		if ctx.Err() != nil {
			return // Recover decides
		}
		t.rollback(ctx, fmt.Errorf("health gate: %w", err), faultArtifact)
		return
	}
	t.finish(ctx)
}

// finish removes the old container and gives the new one its name; the new
// one passed the health gate. Safe to re-run from any step after healthy.
func (t *txn) finish(ctx context.Context) {
	e := t.e
	if t.rec.Step != cpHealthy && t.rec.Step != cpOldRemoved && t.rec.Step != cpRenamed {
		if err := t.step(cpHealthy); err != nil {
			t.log.Error("journal", "err", err)
			return
		}
	}
	if err := e.removeIfExists(ctx, t.sw.OldID); err != nil {
		t.log.Error("removing the old container failed; Recover will retry", "err", err)
		return
	}
	if t.rec.Step == cpHealthy {
		if err := t.step(cpOldRemoved); err != nil {
			t.log.Error("journal", "err", err)
			return
		}
	}
	if err := e.renameNext(ctx, t.sw.NewID); err != nil {
		t.log.Error("renaming the new container failed; Recover will retry", "err", err)
		return
	}
	if t.rec.Step == cpOldRemoved {
		if err := t.step(cpRenamed); err != nil {
			t.log.Error("journal", "err", err)
			return
		}
	}
	img := t.sw.Image
	if err := writeJSON(e.statePath(installedFile), img); err != nil {
		t.log.Error("recording the installed image failed", "err", err)
	}
	e.setImage(&img)
	// Persist the result before the journal goes: a crash in between
	// replays finish, which reports Installed again.
	e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_Installed, "", nil), true)
	if err := e.j.Clear(); err != nil {
		t.log.Error("clearing the journal failed", "err", err)
	}
	_ = journal.Remove(e.statePath(swapFile))
	e.crashPoint(cpCommitted)
	t.log.Info("collector image installed", "image", img.Ref, "digest", img.Digest, "id", img.ID)
}

// renameNext gives the new container the collector's name (no-op when it
// already has it).
func (e *Engine) renameNext(ctx context.Context, id string) error {
	c, err := e.docker.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return err
	}
	if c.Container.Name != "/"+e.o.Name {
		if _, err := e.docker.ContainerRename(ctx, id, client.ContainerRenameOptions{NewName: e.o.Name}); err != nil {
			return err
		}
	}
	if c.Container.State == nil || !c.Container.State.Running {
		if _, err := e.docker.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// rollback removes the new container and starts the old one again.
func (t *txn) rollback(ctx context.Context, cause error, f fault) {
	e := t.e
	ctx = context.WithoutCancel(ctx) // a rollback is finished even at shutdown
	if t.rec.Reason == "" {
		t.rec.Reason = cause.Error()
	}
	t.log.Warn("collector image install failed; rolling back", "reason", t.rec.Reason)
	if err := t.step(cpRollbackBegin); err != nil {
		t.log.Error("journal", "err", err)
	}
	next := t.sw.NewID
	if next == "" {
		next = e.nextName()
	}
	if err := e.removeIfExists(ctx, next); err != nil {
		t.reportStuck(fmt.Errorf("rollback: remove %s: %w", e.nextName(), err))
		return
	}
	_ = e.removeIfExists(ctx, e.nextName()) // created but not recorded
	if err := t.step(cpNextRemoved); err != nil {
		t.log.Error("journal", "err", err)
	}
	if restarts(t.sw.OldRestart) {
		pol := t.sw.OldRestart
		if _, err := e.docker.ContainerUpdate(ctx, t.sw.OldID, client.ContainerUpdateOptions{RestartPolicy: &pol}); err != nil {
			t.reportStuck(fmt.Errorf("rollback: restore the restart policy of %s: %w", e.o.Name, err))
			return
		}
	}
	if t.sw.OldRunning {
		if err := e.startAndConfirm(ctx, t.sw.OldID); err != nil {
			t.reportStuck(fmt.Errorf("rollback: restart %s: %w", e.o.Name, err))
			return
		}
	}
	if err := t.step(cpOldRestarted); err != nil {
		t.log.Error("journal", "err", err)
	}
	if f != faultNone {
		if err := e.quarantine(t.rec.Hash, t.rec.Version, t.rec.Reason, f == faultTransient); err != nil {
			t.log.Warn("quarantine failed", "err", err)
		}
	}
	if err := t.step(cpQuarantined); err != nil {
		t.log.Error("journal", "err", err)
	}
	e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed,
		"rolled back to the previous container: "+t.rec.Reason, nil), true)
	if err := e.j.Clear(); err != nil {
		t.log.Error("clearing the journal failed", "err", err)
	}
	_ = journal.Remove(e.statePath(swapFile))
	t.log.Info("rolled back: the previous collector container runs again")
}

// reportStuck reports a rollback that could not complete; the journal stays
// so the next Recover tries again.
func (t *txn) reportStuck(err error) {
	t.log.Error("rollback incomplete; the next start retries it", "err", err)
	t.e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed,
		t.rec.Reason+"; "+err.Error(), nil), true)
}

// startAndConfirm starts a container and waits until the engine reports it
// running.
func (e *Engine) startAndConfirm(ctx context.Context, id string) error {
	if _, err := e.docker.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return err
	}
	deadline := time.Now().Add(e.o.StartTimeout)
	for {
		c, err := e.docker.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil {
			return err
		}
		if s := c.Container.State; s != nil && s.Running {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("container %s is not running after start (status %s)", id, c.Container.State.Status)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(e.o.PollInterval):
		}
	}
}

// removeIfExists force-removes a container (volumes are kept); absent is fine.
func (e *Engine) removeIfExists(ctx context.Context, idOrName string) error {
	if idOrName == "" {
		return nil
	}
	_, err := e.docker.ContainerRemove(ctx, idOrName, client.ContainerRemoveOptions{Force: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return err
	}
	return nil
}

// rawSections extracts the Config and HostConfig objects of an inspect
// response as the engine sent them.
func rawSections(raw json.RawMessage) (cfg, host json.RawMessage, err error) {
	var r struct {
		Config     json.RawMessage
		HostConfig json.RawMessage
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, nil, fmt.Errorf("decode inspect response: %w", err)
	}
	return r.Config, r.HostConfig, nil
}

// restarts reports whether a restart policy could start a stopped container
// again (at a daemon restart).
func restarts(p container.RestartPolicy) bool {
	return p.Name != "" && p.Name != container.RestartPolicyDisabled
}
