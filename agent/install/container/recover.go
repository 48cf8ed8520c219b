package container

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/client"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/statefile"
)

// Recover implements install.Backend: a swap interrupted before the new
// container started is abandoned; one whose new container started is
// judged by the health gate; one past the gate is finished; a rollback is
// finished.
func (b *Backend) Recover(_ context.Context, t *install.Txn) (install.Resume, error) {
	b.swapFor(t)
	switch t.Record().Step {
	case cpImageReady, cpCreating, cpCreated, cpOldStopped:
		return install.Abandon, nil
	case cpNextStarted:
		return install.Gate, nil
	case cpOldRemoved, cpRenamed:
		return install.Commit, nil
	case cpNextRemoved, cpOldRestarted:
		return install.RollBack, nil
	}
	return 0, fmt.Errorf("container: unknown journal step %q", t.Record().Step)
}

// Reconcile implements install.Reconciler: exactly one container named
// <name> runs. A <name>-next left next to <name> is removed (the proven
// container wins), a lone <name>-next takes the name.
func (b *Backend) Reconcile(ctx context.Context, _ bool) error {
	cur, curErr := b.docker.ContainerInspect(ctx, b.o.Name, client.ContainerInspectOptions{})
	next, nextErr := b.docker.ContainerInspect(ctx, b.nextName(), client.ContainerInspectOptions{})
	if curErr != nil && !cerrdefs.IsNotFound(curErr) {
		return fmt.Errorf("container: inspect %s: %w", b.o.Name, curErr)
	}
	if nextErr != nil && !cerrdefs.IsNotFound(nextErr) {
		return fmt.Errorf("container: inspect %s: %w", b.nextName(), nextErr)
	}
	switch {
	case nextErr == nil && curErr == nil:
		b.log.Warn("removing a leftover container from an interrupted swap", "leftover", b.nextName())
		if err := b.removeIfExists(ctx, next.Container.ID); err != nil {
			return fmt.Errorf("container: remove %s: %w", b.nextName(), err)
		}
		if s := cur.Container.State; s != nil && !s.Running {
			return b.startAndConfirm(ctx, cur.Container.ID)
		}
	case nextErr == nil:
		b.log.Warn("the collector container is missing; the new one takes its name", "from", b.nextName())
		return b.renameNext(ctx, next.Container.ID)
	}
	return nil
}

// refreshImage learns what <name> runs; the installed record adds the
// offer that installed it.
func (b *Backend) refreshImage(ctx context.Context) (ImageInfo, error) {
	info, err := InspectRunning(ctx, b.docker, b.o.Name)
	if err != nil {
		b.setImage(nil)
		return ImageInfo{}, err
	}
	var inst ImageInfo
	if ok, _ := statefile.Read(b.statePath(InstalledFile), &inst); ok && inst.ID == info.ID {
		info.Hash, info.OfferHash = inst.Hash, inst.OfferHash
		if info.Digest == "" {
			info.Digest = inst.Digest
		}
	}
	b.setImage(&info)
	return info, nil
}

// InspectRunning returns the image the container named name runs: its ID,
// the reference the container names, its version label, and the registry
// manifest digest of that reference when the engine knows one.
func InspectRunning(ctx context.Context, dc *client.Client, name string) (ImageInfo, error) {
	c, err := dc.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return ImageInfo{}, fmt.Errorf("container: no container named %s: %w", name, err)
		}
		return ImageInfo{}, fmt.Errorf("container: inspect %s: %w", name, err)
	}
	img, err := dc.ImageInspect(ctx, c.Container.Image)
	if err != nil {
		return ImageInfo{}, fmt.Errorf("container: inspect the image of %s: %w", name, err)
	}
	info := ImageInfo{ID: img.ID}
	if c.Container.Config != nil {
		info.Ref = c.Container.Config.Image
	}
	if img.Config != nil {
		info.Version = img.Config.Labels[VersionLabel]
	}
	if ref, err := reference.ParseNormalizedNamed(info.Ref); err == nil {
		if d, ok := ref.(reference.Digested); ok {
			info.Digest = d.Digest().String()
		} else {
			for _, rd := range img.RepoDigests {
				if n, err := reference.ParseNormalizedNamed(rd); err == nil && n.Name() == ref.Name() {
					if d, ok := n.(reference.Digested); ok {
						info.Digest = d.Digest().String()
					}
				}
			}
		}
	}
	return info, nil
}
