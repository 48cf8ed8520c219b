package binary

import (
	"encoding/hex"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/admission"
)

// ErrRefused wraps every admission refusal (the same error in both modes).
var ErrRefused = admission.ErrRefused

// admit applies local policy to one offered package. It reports whether
// the package is the updater itself. Called with e.mu held.
func (e *Engine) admit(name string, p *protobufs.PackageAvailable) (self bool, err error) {
	refuse := func(format string, a ...any) (bool, error) {
		return false, admission.Refusef(format, a...)
	}
	switch {
	case name == e.o.Package && p.GetType() == protobufs.PackageType_PackageType_Addon:
	case name == SelfPackage && p.GetType() == protobufs.PackageType_PackageType_TopLevel:
		if e.self == nil {
			return refuse("self-update is not enabled on this updater")
		}
		self = true
	case name == e.o.Package || name == SelfPackage:
		return refuse("package %q offered as %s; %q must be an Addon and %q a TopLevel package",
			name, p.GetType(), e.o.Package, SelfPackage)
	default:
		return refuse("unknown package %q: this updater installs only %q (Addon) and %q (TopLevel)", name, e.o.Package, SelfPackage)
	}
	if p.GetFile().GetDownloadUrl() == "" {
		return refuse("the offer of %q has no file.download_url", name)
	}
	if err := admission.CheckContentHash(p); err != nil {
		return false, err
	}
	running := e.o.UpdaterVersion
	if !self && e.inst != nil {
		running = e.inst.Version
	} else if !self {
		running = ""
	}
	if err := e.policy().Check(p, running); err != nil {
		return false, err
	}
	return self, nil
}

// policy is the trust.* policy of this engine with its quarantine.
func (e *Engine) policy() admission.Policy {
	return admission.Policy{
		RequireSignature: e.o.RequireSignature,
		AllowDowngrade:   e.o.AllowDowngrade,
		Quarantine:       e.quarantineStore(),
	}
}

func unhex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}
