package container

import (
	"context"
	"encoding/json"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/myriarch/myriarch/agent/install"
)

// Prepare implements install.Preparer: before anything is downloaded it
// inspects <name>, refuses a container that cannot be recreated faithfully
// (a fault of the host, not of the image: nothing is quarantined), removes
// a <name>-next left over without a journal, and records the old container.
func (b *Backend) Prepare(ctx context.Context, t *install.Txn) (bool, error) {
	rec := t.Record()
	src, err := parseSource(t.Offer().GetFile().GetDownloadUrl(), t.Offer().GetFile().GetContentHash())
	if err != nil {
		return false, install.Fail(install.Refused, err)
	}
	old, err := b.docker.ContainerInspect(ctx, b.o.Name, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return false, install.Failf(install.Refused, "there is no container named %s to upgrade (container.name)", b.o.Name)
	}
	if err != nil {
		return false, install.Failf(install.Transient, "inspect container %s: %w", b.o.Name, err)
	}
	oldCfg, oldHost, err := rawSections(old.Raw)
	if err != nil {
		return false, install.Failf(install.Transient, "inspect container %s: %w", b.o.Name, err)
	}
	oldImg, err := b.docker.ImageInspect(ctx, old.Container.Image)
	if err != nil {
		return false, install.Failf(install.Transient, "inspect the image of %s: %w", b.o.Name, err)
	}
	// Refuse what cannot be reproduced before downloading anything.
	if _, err := reproduce(old.Container, oldCfg, oldHost, oldImg.Config, "probe", b.o.StorageDir); err != nil {
		return false, install.Fail(install.Refused, err)
	}
	if err := b.removeIfExists(ctx, b.nextName()); err != nil {
		return false, install.Failf(install.Transient, "remove leftover %s: %w", b.nextName(), err)
	}
	rec.PrevDir = old.Container.ID
	s := &swap{src: src, old: old.Container, oldCfg: oldCfg, oldHost: oldHost, oldImg: oldImg.Config,
		sw: swapState{TxnID: rec.ID, OldID: old.Container.ID, OldRunning: old.Container.State != nil && old.Container.State.Running,
			OldRestart: old.Container.HostConfig.RestartPolicy}}
	b.cur = s
	return false, b.saveSwap(s)
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
