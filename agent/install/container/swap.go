package container

import (
	"context"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/statefile"
)

// Activate stops <name> (kept, its restart policy set to "no" meanwhile so
// a daemon restart cannot start it next to the new one) and starts
// <name>-next.
func (b *Backend) Activate(ctx context.Context, t *install.Txn) error {
	s := b.swapFor(t)
	if restarts(s.sw.OldRestart) {
		if _, err := b.docker.ContainerUpdate(ctx, s.sw.OldID, client.ContainerUpdateOptions{
			RestartPolicy: &container.RestartPolicy{Name: container.RestartPolicyDisabled}}); err != nil {
			return install.Failf(install.Transient, "disable the restart policy of %s while it is kept stopped: %w", b.o.Name, err)
		}
	}
	stopAt := time.Now()
	if s.sw.OldRunning {
		if _, err := b.docker.ContainerStop(ctx, s.sw.OldID, client.ContainerStopOptions{}); err != nil {
			return install.Failf(install.Transient, "stop %s: %w", b.o.Name, err)
		}
	}
	if err := t.Step(cpOldStopped); err != nil {
		return install.Failf(install.Transient, "journal: %w", err)
	}
	startAt := time.Now()
	if _, err := b.docker.ContainerStart(ctx, s.sw.NewID, client.ContainerStartOptions{}); err != nil {
		return install.Failf(install.Artifact, "start %s: %w", b.nextName(), err)
	}
	t.Log().Info("new container started", "old_stopped_in", startAt.Sub(stopAt).Round(time.Millisecond),
		"started_in", time.Since(startAt).Round(time.Millisecond))
	if err := t.Step(cpNextStarted); err != nil {
		return install.Failf(install.Transient, "journal: %w", err)
	}
	return nil
}

// Gate implements install.Backend (see healthGate).
func (b *Backend) Gate(ctx context.Context, t *install.Txn) error {
	s := b.swapFor(t)
	id := s.sw.NewID
	if id == "" {
		id = b.nextName()
	}
	if err := b.healthGate(ctx, id, s.sw.InstanceUID); err != nil {
		return install.Failf(install.Artifact, "health gate: %w", err)
	}
	return nil
}

// Commit removes the old container and gives the new one its name. Safe
// to repeat after a crash or an error (the next start does).
func (b *Backend) Commit(ctx context.Context, t *install.Txn) error {
	s := b.swapFor(t)
	if s.sw.NewID == "" {
		s.sw.NewID = b.idOf(ctx, b.nextName())
	}
	if err := b.removeIfExists(ctx, s.sw.OldID); err != nil {
		return fmt.Errorf("remove the old container: %w", err)
	}
	if err := t.Step(cpOldRemoved); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := b.renameNext(ctx, s.sw.NewID); err != nil {
		return fmt.Errorf("rename the new container: %w", err)
	}
	if err := t.Step(cpRenamed); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	img := s.sw.Image
	if err := statefile.Write(b.statePath(InstalledFile), img); err != nil {
		t.Log().Error("recording the installed image failed", "err", err)
	}
	b.setImage(&img)
	b.endSwap()
	t.Log().Info("collector image installed", "image", img.Ref, "digest", img.Digest, "id", img.ID)
	return nil
}

// Rollback removes the new container and starts the old one again, with
// its restart policy back. It finishes even at shutdown; when the engine
// does not answer, the next start tries again.
func (b *Backend) Rollback(ctx context.Context, t *install.Txn) error {
	ctx = context.WithoutCancel(ctx)
	if err := b.undo(ctx, t, true); err != nil {
		return install.Incomplete(err)
	}
	t.Log().Info("rolled back: the previous collector container runs again")
	return nil
}

// Abandon removes <name>-next if it was created and makes sure <name> runs
// as before.
func (b *Backend) Abandon(ctx context.Context, t *install.Txn) error {
	return b.undo(context.WithoutCancel(ctx), t, false)
}

// undo is the way back: <name>-next removed, <name>'s restart policy
// restored, <name> started again if it ran.
func (b *Backend) undo(ctx context.Context, t *install.Txn, steps bool) error {
	s := b.swapFor(t)
	next := s.sw.NewID
	if next == "" {
		next = b.nextName()
	}
	if err := b.removeIfExists(ctx, next); err != nil {
		return fmt.Errorf("remove %s: %w", b.nextName(), err)
	}
	if err := b.removeIfExists(ctx, b.nextName()); err != nil { // created but not recorded
		return fmt.Errorf("remove %s: %w", b.nextName(), err)
	}
	if steps {
		t.Mark(cpNextRemoved)
	}
	if s.sw.OldID != "" {
		if restarts(s.sw.OldRestart) {
			pol := s.sw.OldRestart
			if _, err := b.docker.ContainerUpdate(ctx, s.sw.OldID, client.ContainerUpdateOptions{RestartPolicy: &pol}); err != nil {
				return fmt.Errorf("restore the restart policy of %s: %w", b.o.Name, err)
			}
		}
		if s.sw.OldRunning {
			if err := b.startAndConfirm(ctx, s.sw.OldID); err != nil {
				return fmt.Errorf("restart %s: %w", b.o.Name, err)
			}
		}
	}
	if steps {
		t.Mark(cpOldRestarted)
	}
	b.endSwap()
	return nil
}

// renameNext gives the new container the collector's name (no-op when it
// already has it) and makes sure it runs.
func (b *Backend) renameNext(ctx context.Context, id string) error {
	c, err := b.docker.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return err
	}
	if c.Container.Name != "/"+b.o.Name {
		if _, err := b.docker.ContainerRename(ctx, id, client.ContainerRenameOptions{NewName: b.o.Name}); err != nil {
			return err
		}
	}
	if c.Container.State == nil || !c.Container.State.Running {
		if _, err := b.docker.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// startAndConfirm starts a container (a no-op when it runs) and waits until
// the engine reports it running.
func (b *Backend) startAndConfirm(ctx context.Context, id string) error {
	if _, err := b.docker.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return err
	}
	deadline := time.Now().Add(b.env.StartTimeout)
	for {
		c, err := b.docker.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
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
		case <-time.After(b.env.PollInterval):
		}
	}
}

// removeIfExists force-removes a container (volumes are kept); absent is fine.
func (b *Backend) removeIfExists(ctx context.Context, idOrName string) error {
	if idOrName == "" {
		return nil
	}
	_, err := b.docker.ContainerRemove(ctx, idOrName, client.ContainerRemoveOptions{Force: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return err
	}
	return nil
}

func (b *Backend) idOf(ctx context.Context, name string) string {
	c, err := b.docker.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if err != nil {
		return ""
	}
	return c.Container.ID
}

// restarts reports whether a restart policy could start a stopped container
// again (at a daemon restart).
func restarts(p container.RestartPolicy) bool {
	return p.Name != "" && p.Name != container.RestartPolicyDisabled
}
