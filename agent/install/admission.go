package install

import (
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/hashicorp/go-version"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// ErrRefused wraps every admission refusal.
var ErrRefused = errors.New("offer refused by local policy")

var safeVersion = regexp.MustCompile(`^v?[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$`)

// admit applies local policy to one offered package. It reports whether
// the package is the updater itself. Called with e.mu held.
func (e *Engine) admit(name string, p *protobufs.PackageAvailable) (self bool, err error) {
	refuse := func(format string, a ...any) (bool, error) {
		return false, fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, a...))
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
	if n := len(p.GetFile().GetContentHash()); n != 32 {
		return refuse("file.content_hash must be a 32-byte SHA-256, got %d bytes", n)
	}
	offered, err := version.NewVersion(p.GetVersion())
	if err != nil || !safeVersion.MatchString(p.GetVersion()) {
		return refuse("unparsable version %q", p.GetVersion())
	}
	if e.o.RequireSignature && len(p.GetFile().GetSignature()) == 0 {
		return refuse("unsigned package: trust.require_signature is set and the offer has no file.signature")
	}
	running := e.o.UpdaterVersion
	if !self && e.inst != nil {
		running = e.inst.Version
	} else if !self {
		running = ""
	}
	if running != "" {
		if cur, err := version.NewVersion(running); err == nil && offered.LessThan(cur) && !e.o.AllowDowngrade {
			return refuse("downgrade from %s to %s refused (trust.allow_downgrade is false)", running, p.GetVersion())
		}
	}
	if err := e.quarantined(hexHash(p)); err != nil {
		return false, err
	}
	return self, nil
}

// quarantined refuses a hash that failed before.
func (e *Engine) quarantined(hash string) error {
	q, err := e.loadQuarantine()
	if err != nil {
		e.log.Warn("quarantine unreadable", "err", err)
		return nil
	}
	ent, ok := q[hash]
	if !ok {
		return nil
	}
	if !ent.Transient {
		return fmt.Errorf("%w: previously failed: version %s with this hash failed at %s (%s); offer a different hash",
			ErrRefused, ent.Version, ent.Failed.Format(time.RFC3339), ent.Reason)
	}
	if time.Now().Before(ent.RetryAfter) {
		return fmt.Errorf("%w: previously failed: version %s failed at %s (%s); next attempt allowed after %s",
			ErrRefused, ent.Version, ent.Failed.Format(time.RFC3339), ent.Reason, ent.RetryAfter.Format(time.RFC3339))
	}
	return nil
}

func hexHash(p *protobufs.PackageAvailable) string {
	return hex.EncodeToString(p.GetFile().GetContentHash())
}

func unhex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}

func sameHash(a, b *protobufs.PackageAvailable) bool {
	return hexHash(a) == hexHash(b)
}
