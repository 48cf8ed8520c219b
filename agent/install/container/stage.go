package container

import (
	"context"
	"encoding/json"

	"github.com/moby/moby/client"

	"github.com/myriarch/myriarch/agent/install"
)

// Stage makes the verified image present (loads the tarball, or takes the
// pulled image), checks its version label, then creates <name>-next with
// the old container's settings, inspects it again and compares: any
// setting the engine dropped or changed refuses the swap. Nothing running
// is touched.
func (b *Backend) Stage(ctx context.Context, t *install.Txn) error {
	s := b.swapFor(t)
	if err := b.imageReady(ctx, t, s); err != nil {
		return err
	}
	return b.createNext(ctx, t, s)
}

// imageReady makes the verified image present and checks its version
// label.
func (b *Backend) imageReady(ctx context.Context, t *install.Txn, s *swap) error {
	rec := t.Record()
	var info ImageInfo
	switch {
	case t.Artifact() != "":
		var err error
		if info, err = b.loadTarball(ctx, t.Artifact()); err != nil {
			return err
		}
	case s.pulled != nil:
		info = *s.pulled
	default:
		return install.Failf(install.Transient, "no image to stage for %s", rec.Version)
	}
	if info.Version != rec.Version {
		return install.Failf(install.Artifact, "image %s has %s=%q, the offer says version %q", info.ID, VersionLabel, info.Version, rec.Version)
	}
	info.Hash, info.OfferHash = rec.Hash, rec.OfferHash
	s.sw.Image = info
	if err := t.Step(cpImageReady); err != nil {
		return install.Failf(install.Transient, "journal: %w", err)
	}
	return nil
}

// createNext creates <name>-next from the image with the old container's
// settings, then compares what the engine made with the old container.
func (b *Backend) createNext(ctx context.Context, t *install.Txn, s *swap) error {
	rec := t.Record()
	spec, err := reproduce(s.old, s.oldCfg, s.oldHost, s.oldImg, s.sw.Image.Ref, b.o.StorageDir)
	if err != nil {
		return install.Fail(install.Refused, err)
	}
	if b.o.StorageDir != "" && s.sw.OldRunning {
		uid, err := b.instanceUID(ctx, s.sw.OldID)
		if err != nil {
			t.Log().Warn("no supervisor instance UID to carry over yet", "err", err)
		}
		s.sw.InstanceUID = uid
	}
	if err := b.saveSwap(s); err != nil {
		return err
	}
	if err := t.Step(cpCreating); err != nil {
		return install.Failf(install.Transient, "journal: %w", err)
	}
	created, err := b.docker.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: b.nextName(), Config: spec.Config, HostConfig: spec.Host, NetworkingConfig: spec.Network,
	})
	if err != nil {
		return install.Failf(install.Transient, "create %s: %w", b.nextName(), err)
	}
	rec.NewDir, s.sw.NewID = created.ID, created.ID
	if err := b.saveSwap(s); err != nil {
		return err // Abandon removes <name>-next
	}
	if err := t.Step(cpCreated); err != nil {
		return install.Failf(install.Transient, "journal: %w", err)
	}
	nw, err := b.docker.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{})
	if err != nil {
		return install.Failf(install.Transient, "inspect %s: %w", b.nextName(), err)
	}
	var newHost json.RawMessage
	if _, newHost, err = rawSections(nw.Raw); err != nil {
		return install.Failf(install.Transient, "inspect %s: %w", b.nextName(), err)
	}
	if err := verifyCreated(s.oldHost, newHost, spec.AddedMounts); err != nil {
		return install.Fail(install.Refused, err)
	}
	return nil
}
