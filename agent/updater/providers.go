package updater

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/myriarch/myriarch/agent/providerreport"
	"github.com/myriarch/myriarch/agent/providers"
)

// providerCapability is announced while the providers run.
const providerCapability = providerreport.Capability

// hostProviders runs the configured variable-substitution providers and reports their
// data to the server (agent/providerreport), so the configuration of this
// host's collector can follow the host.
type hostProviders struct {
	log *slog.Logger
	m   *providers.Manager       // nil when the providers could not be built
	rep *providerreport.Reporter // nil likewise
}

func (u *Updater) newHostProviders() *hostProviders {
	h := &hostProviders{log: u.log.With("component", "providers")}
	cfg := u.cfg.Providers
	cfg.AgentID = u.uid.String()
	m, err := providers.New(cfg, h.log, providers.Options{})
	if err != nil {
		h.log.Error("providers not started; the server renders this host's collector from its attributes alone", "err", err)
		return h
	}
	h.m, h.rep = m, providerreport.New(u.client, h.log)
	if o := u.opts.providersObserver; o != nil {
		h.rep.Sent = o.SnapshotSent
	}
	return h
}

// connected tells the reporter of a new connection: the snapshot is sent again.
func (h *hostProviders) connected() {
	if h.rep != nil {
		h.rep.Connected()
	}
}

// start runs the providers and the reporter until ctx ends.
func (h *hostProviders) start(ctx context.Context, wg *sync.WaitGroup) {
	if h.m == nil {
		return
	}
	wg.Go(func() {
		if err := h.rep.Run(ctx); err != nil {
			h.log.Error("providers are not reported to the server", "err", err)
		}
	})
	wg.Go(func() {
		if err := h.m.Run(ctx, h.rep.Update); err != nil && !errors.Is(err, context.Canceled) {
			h.log.Error("providers stopped", "err", err)
		}
	})
}

// ProvidersObserver is told the size of each providers snapshot sent
// (owntelemetry.Counters).
type ProvidersObserver interface {
	SnapshotSent(size int)
}

// WithProvidersObserver makes o see the providers snapshots sent.
func WithProvidersObserver(o ProvidersObserver) Option {
	return func(opts *options) { opts.providersObserver = o }
}
