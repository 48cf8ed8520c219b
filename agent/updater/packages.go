package updater

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/pkgstatus"
)

// StatusReporter sends package statuses to the server. Each call carries the
// complete set of statuses with ServerProvidedAllPackagesHash set (nil is an
// error). It may be called from any goroutine, any number of times. It is
// the install engine's Reporter, so *install.Engine is a PackageHandler.
type StatusReporter = install.Reporter

var _ PackageHandler = (*install.Engine)(nil)

// PackageHandler takes over the server's package offers: the engine that
// downloads, verifies and activates collector packages plugs in here (see
// WithPackageHandler). opamp-go's own package syncer is never used, because
// it reports Installed before the updater has activated anything.
type PackageHandler interface {
	// HandlePackages is called for every PackagesAvailable offer. It must
	// not block: it starts the work and returns. ctx is the updater's run
	// context (it ends when the updater stops). Progress and results go to
	// report; the handler persists what it reported so LastStatuses can
	// return it after a restart.
	HandlePackages(ctx context.Context, offer *protobufs.PackagesAvailable, report StatusReporter)
	// LastStatuses returns the statuses reported last, sent again when the
	// updater starts; nil when there are none.
	LastStatuses() (*protobufs.PackageStatuses, error)
}

// NotEnabledMessage is the error reported for every offered package while no
// package handler is plugged in.
const NotEnabledMessage = "package installation not enabled"

// refusingHandler answers every offer with InstallFailed for each package.
type refusingHandler struct{}

var _ PackageHandler = refusingHandler{}

func (refusingHandler) HandlePackages(_ context.Context, offer *protobufs.PackagesAvailable, report StatusReporter) {
	_ = report(RefuseAll(offer, NotEnabledMessage))
}

func (refusingHandler) LastStatuses() (*protobufs.PackageStatuses, error) { return nil, nil }

// RefuseAll builds the statuses that reject every package of offer with msg.
func RefuseAll(offer *protobufs.PackagesAvailable, msg string) *protobufs.PackageStatuses {
	hash := offer.GetAllPackagesHash()
	if hash == nil {
		hash = []byte{}
	}
	st := &protobufs.PackageStatuses{
		Packages:                      make(map[string]*protobufs.PackageStatus, len(offer.GetPackages())),
		ServerProvidedAllPackagesHash: hash,
		ErrorMessage:                  msg,
	}
	for name, p := range offer.GetPackages() {
		st.Packages[name] = &protobufs.PackageStatus{
			Name:                 name,
			ServerOfferedVersion: p.GetVersion(),
			ServerOfferedHash:    pkgstatus.OfferedHash(p),
			Status:               protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed,
			ErrorMessage:         msg,
		}
	}
	return st
}

// errNotLocal is returned by the opamp-go package-store methods that only its
// own (unused) syncer would call.
var errNotLocal = errors.New("packages are managed by the updater's package handler")

// packagesState satisfies opamp-go's PackagesStateProvider, which the client
// requires for the AcceptsPackages capability. Only LastReportedStatuses is
// used (at start); it comes from the PackageHandler.
type packagesState struct {
	handler PackageHandler
	mu      sync.Mutex
	last    *protobufs.PackageStatuses
}

var _ types.PackagesStateProvider = (*packagesState)(nil)

func (p *packagesState) AllPackagesHash() ([]byte, error)     { return nil, errNotLocal }
func (p *packagesState) SetAllPackagesHash(hash []byte) error { return errNotLocal }
func (p *packagesState) Packages() ([]string, error)          { return nil, errNotLocal }
func (p *packagesState) PackageState(string) (types.PackageState, error) {
	return types.PackageState{}, errNotLocal
}
func (p *packagesState) SetPackageState(string, types.PackageState) error  { return errNotLocal }
func (p *packagesState) CreatePackage(string, protobufs.PackageType) error { return errNotLocal }
func (p *packagesState) FileContentHash(string) ([]byte, error)            { return nil, errNotLocal }
func (p *packagesState) UpdateContent(context.Context, string, io.Reader, []byte, []byte) error {
	return errNotLocal
}
func (p *packagesState) DeletePackage(string) error { return errNotLocal }

func (p *packagesState) LastReportedStatuses() (*protobufs.PackageStatuses, error) {
	p.mu.Lock()
	last := p.last
	p.mu.Unlock()
	if last != nil {
		return last, nil
	}
	return p.handler.LastStatuses()
}

func (p *packagesState) SetLastReportedStatuses(st *protobufs.PackageStatuses) error {
	p.mu.Lock()
	p.last = st
	p.mu.Unlock()
	return nil
}
