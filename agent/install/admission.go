package install

import (
	"fmt"
	"strings"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/admission"
)

// ErrRefused wraps every admission refusal.
var ErrRefused = admission.ErrRefused

// admitLocked applies local policy to one offered package before anything
// is fetched and returns the back-end that installs it: the package name
// and type, the download URL, the content hash, the back-end's own checks,
// then trust.* (version syntax, required signature, downgrade to a version
// this host has not confirmed healthy) and the quarantine.
func (e *Engine) admitLocked(name string, p *protobufs.PackageAvailable) (*backend, error) {
	b := e.byName[name]
	switch {
	case b != nil && b.desc.Type == p.GetType():
	case b != nil:
		return nil, admission.Refusef("package %q offered as %s; it must be %s", name, p.GetType(), typeName(b.desc.Type))
	case name == SelfPackage || p.GetType() == protobufs.PackageType_PackageType_TopLevel:
		why := ""
		if e.o.NoSelfUpdate != "" {
			why = ": " + e.o.NoSelfUpdate
		}
		return nil, admission.Refusef("TopLevel package %q: self-update is not enabled on this updater%s", name, why)
	default:
		return nil, admission.Refusef("unknown package %q: this updater installs only %s", name, e.acceptedLocked())
	}
	if p.GetFile().GetDownloadUrl() == "" {
		return nil, admission.Refusef("the offer of %q has no file.download_url", name)
	}
	if err := admission.CheckContentHash(p); err != nil {
		return nil, err
	}
	if a, ok := b.Backend.(Admitter); ok {
		if err := a.Admit(p); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRefused, err)
		}
	}
	pol := admission.Policy{RequireSignature: e.o.RequireSignature, AllowDowngrade: e.o.AllowDowngrade,
		Confirmed: e.confirmedStore().Versions(name), Quarantine: e.quarantineStore()}
	if err := pol.Check(p, b.installed.Version); err != nil {
		return nil, err
	}
	return b, nil
}

// acceptedLocked lists what the back-ends install, for a refusal.
func (e *Engine) acceptedLocked() string {
	var parts []string
	for _, b := range e.order {
		parts = append(parts, fmt.Sprintf("%q (%s)", b.desc.Package, typeName(b.desc.Type)))
	}
	return strings.Join(parts, " and ")
}

func typeName(t protobufs.PackageType) string {
	if t == protobufs.PackageType_PackageType_TopLevel {
		return "a TopLevel package"
	}
	return "an Addon"
}
