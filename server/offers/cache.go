package offers

import (
	goversion "github.com/hashicorp/go-version"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/estate"
)

// Evaluating thousands of collectors against one fleet repeats the same
// work: parsing the same version strings, finding the same catalog entry,
// building the same offer per platform. These caches are guarded by e.mu.

type parsedVersion struct {
	v   *goversion.Version
	err error
}

func (e *Engine) versionLocked(s string) (*goversion.Version, error) {
	if p, ok := e.versions[s]; ok {
		return p.v, p.err
	}
	v, err := goversion.NewVersion(s)
	if len(e.versions) > 100000 {
		clear(e.versions) // bounded: versions are few; junk from agents must not grow it
	}
	e.versions[s] = parsedVersion{v, err}
	return v, err
}

type pkgKey struct{ name, version string }

func (e *Engine) catalogLocked(name, version string) *estate.PackageVersion {
	k := pkgKey{name, version}
	if pv, ok := e.packages[k]; ok {
		return pv
	}
	pv := e.est.Package(name, version)
	e.packages[k] = pv
	return pv
}

// offerKey is the platform an offer is built for.
type offerKey struct {
	mode, os, arch string
}

type builtKey struct {
	pv *estate.PackageVersion
	offerKey
	base string
}

type builtOffer struct {
	pas  *protobufs.PackagesAvailable
	hash []byte
	why  string
}

func (e *Engine) offerForLocked(c *collector, pv *estate.PackageVersion, u *updater) (*protobufs.PackagesAvailable, []byte, string) {
	return e.offerOnLocked(pv, e.offerKeyForLocked(c, u))
}

// offerKeyForLocked is the platform of c's offer: the collector's, or where it
// does not say, its updater's.
func (e *Engine) offerKeyForLocked(c *collector, u *updater) offerKey {
	k := offerKey{mode: u.mode, os: c.view.Value("os.type"), arch: c.view.Value("host.arch")}
	if k.os == "" {
		k.os = u.view.Value("os.type")
	}
	if k.arch == "" {
		k.arch = u.view.Value("host.arch")
	}
	return k
}

// offerOnLocked is the offer of pv for a platform.
func (e *Engine) offerOnLocked(pv *estate.PackageVersion, k offerKey) (*protobufs.PackagesAvailable, []byte, string) {
	bk := builtKey{pv: pv, offerKey: k}
	if e.opts.BaseURL != nil {
		bk.base = e.opts.BaseURL()
	}
	if b, ok := e.offers[bk]; ok {
		return b.pas, b.hash, b.why
	}
	pas, hash, why := e.buildOffer(k.os, k.arch, pv, k.mode)
	e.offers[bk] = builtOffer{pas, hash, why}
	return pas, hash, why
}

// resetCachesLocked drops what depends on the estate.
func (e *Engine) resetCachesLocked() {
	e.packages = map[pkgKey]*estate.PackageVersion{}
	e.offers = map[builtKey]builtOffer{}
}
