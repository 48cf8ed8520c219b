package offers

import (
	"github.com/google/uuid"
)

// offerDetail is the part of a collector's record that a collector never
// offered anything, with no error and no failed hashes, does without.
type offerDetail struct {
	assign   string // assignment error
	err      string
	progress *Progress
	failed   map[string]bool // quarantined hashes (nil: none)
	// to is the updater the current offer went to.
	to uuid.UUID
	*offerSpec
}

// offerSpec is the current offer, the same for every collector offered
// the same package on the same platform: shared (Engine.specLocked),
// never written once shared. Comparable, so that equal specs are found.
type offerSpec struct {
	pkg      string
	offerVer string
	hash     string // per-package hash of the offer (bytes)
	content  string // content_hash of the offer's file (bytes)
	// offer is the platform the offer was built for, so that the
	// instance the updater is connected to can deliver it.
	offer offerKey
}

// noOffer is the detail of every record that has none of its own, noSpec
// the offer of every detail without one. Neither is ever written.
var (
	noSpec  = &offerSpec{}
	noOffer = &offerDetail{offerSpec: noSpec}
)

func newCollector(uid uuid.UUID) *collector { return &collector{uid: uid, offerDetail: noOffer} }

// own returns c's detail to write, its own from then on.
func (c *collector) own() *offerDetail {
	if c.offerDetail == noOffer {
		c.offerDetail = &offerDetail{offerSpec: noSpec}
	}
	return c.offerDetail
}

// shed gives c's detail back once it holds nothing.
func (c *collector) shed() {
	if d := c.offerDetail; d != noOffer && d.zero() {
		c.offerDetail = noOffer
	}
}

func (d *offerDetail) zero() bool {
	return d.assign == "" && d.err == "" && d.progress == nil && len(d.failed) == 0 && d.to == uuid.Nil && d.offerSpec == noSpec
}

// setErr, setAssign and setProgress write a field, owning the detail only
// when the value is not the zero one it already reads.
func (c *collector) setErr(s string) {
	if s != c.err {
		c.own().err = s
	}
}

func (c *collector) setAssign(s string) {
	if s != c.assign {
		c.own().assign = s
	}
}

func (c *collector) setProgress(p *Progress) {
	if p != c.progress {
		c.own().progress = p
	}
}

// clearFailed forgets c's failed hashes, and the error of a failed offer.
func (c *collector) clearFailed() {
	if c.failed != nil {
		c.own().failed = nil
	}
	if c.state == Failed {
		c.setErr("")
	}
	c.shed()
}

// setOffer makes s (shared) c's current offer, sent to updater to.
func (c *collector) setOffer(s *offerSpec, to uuid.UUID) {
	if s == c.offerSpec && to == c.to {
		return
	}
	d := c.own()
	d.offerSpec, d.to = s, to
}

// specLocked returns the shared offerSpec with these fields (noSpec when
// all are empty). Caller holds e.mu.
func (e *Engine) specLocked(pkg, ver string, hash, content []byte, offer offerKey) *offerSpec {
	s := offerSpec{pkg: e.strs.String(pkg), offerVer: e.strs.String(ver), hash: string(hash), content: string(content),
		offer: offerKey{mode: e.strs.String(offer.mode), os: e.strs.String(offer.os), arch: e.strs.String(offer.arch)}}
	if s == (offerSpec{}) {
		return noSpec
	}
	e.specs.Max = maxSharedSpecs
	return e.specs.Of(s)
}

// maxSharedSpecs bounds the offers shared (one per package version and
// platform offered, with or without its file's content hash); the table
// starts over when full.
const maxSharedSpecs = 1024
