// Package admission holds the local policy checks both install engines
// (binary and container mode) apply to an offered package before any byte
// is fetched: content hash shape, version syntax, required signature,
// downgrade (to a version the host has not confirmed healthy), and hashes
// that failed before. The server can never relax them; each refusal wraps
// ErrRefused and says what was refused and why.
//
// Which package names and download URLs are acceptable differs per mode and
// stays in the engines.
package admission

import (
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"

	"github.com/hashicorp/go-version"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/quarantine"
)

// ErrRefused wraps every admission refusal.
var ErrRefused = errors.New("offer refused by local policy")

// safeVersion keeps versions usable as directory names and in logs.
var safeVersion = regexp.MustCompile(`^v?[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$`)

// Refusef returns a refusal: ErrRefused followed by the formatted reason.
func Refusef(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, a...))
}

// CheckContentHash refuses an offer whose file.content_hash is not a SHA-256.
func CheckContentHash(p *protobufs.PackageAvailable) error {
	if n := len(p.GetFile().GetContentHash()); n != 32 {
		return Refusef("file.content_hash must be a 32-byte SHA-256, got %d bytes", n)
	}
	return nil
}

// Policy is the trust.* configuration plus what the engine recorded: the
// versions this host confirmed healthy and the quarantine.
type Policy struct {
	RequireSignature bool
	AllowDowngrade   bool
	// Confirmed are the versions of the offered package this host ran and
	// confirmed healthy (agent/confirmed): going back to one of them is
	// allowed without AllowDowngrade.
	Confirmed []string
	// Quarantine, when set, refuses hashes that failed before.
	Quarantine *quarantine.Store
}

// Check applies, in order: version syntax, required signature, downgrade
// relative to running ("" when nothing known runs; an unparsable running
// version never blocks) to a version not in Confirmed, and the quarantine.
func (pol Policy) Check(p *protobufs.PackageAvailable, running string) error {
	offered, err := version.NewVersion(p.GetVersion())
	if err != nil || !safeVersion.MatchString(p.GetVersion()) {
		return Refusef("unparsable version %q", p.GetVersion())
	}
	if pol.RequireSignature && len(p.GetFile().GetSignature()) == 0 {
		return Refusef("unsigned package: trust.require_signature is set and the offer has no file.signature")
	}
	if running != "" && !pol.AllowDowngrade {
		if cur, err := version.NewVersion(running); err == nil && offered.LessThan(cur) && !confirmed(offered, pol.Confirmed) {
			return Refusef("downgrade from %s to %s refused (trust.allow_downgrade is false): %s", running, p.GetVersion(), confirmedText(pol.Confirmed))
		}
	}
	if pol.Quarantine != nil {
		if err := pol.Quarantine.Check(HexHash(p)); err != nil {
			return fmt.Errorf("%w: %w", ErrRefused, err)
		}
	}
	return nil
}

// HexHash is the offer's content hash in lower-case hex, the key of the
// journal and the quarantine.
func HexHash(p *protobufs.PackageAvailable) string {
	return hex.EncodeToString(p.GetFile().GetContentHash())
}

// SameHash reports whether two offers name the same content.
func SameHash(a, b *protobufs.PackageAvailable) bool { return HexHash(a) == HexHash(b) }
