package offers

import (
	"testing"

	"github.com/google/uuid"
)

// Collectors never offered anything share one detail; an offer gives each
// its own, with the offer itself shared by every collector offered the same
// package on the same platform; a failure and its retry write only the
// failing collector's detail.
func TestCollectorsShareTheirDetailAndOffer(t *testing.T) {
	e, _, reg := buildPairs(t, 3)
	defer reg.Close()
	defer e.Close()
	e.mu.Lock()
	for _, c := range e.collectors {
		if c.state != UpToDate || c.offerDetail != noOffer {
			t.Errorf("up-to-date collector %s: state %s, own detail %t", c.uid, c.state, c.offerDetail != noOffer)
		}
	}
	e.mu.Unlock()

	e.SetEstate(testEstate("0.149.1"))
	e.mu.Lock()
	var spec *offerSpec
	for _, c := range e.collectors {
		if c.state != Offered || c.offerDetail == noOffer || c.to == [16]byte{} || c.pkg != "otelcol-contrib" || c.offerVer != "0.149.1" || len(c.hash) == 0 {
			t.Fatalf("offered collector %s: state %s, detail %+v, offer %+v", c.uid, c.state, *c.offerDetail, *c.offerSpec)
		}
		if spec == nil {
			spec = c.offerSpec
		} else if c.offerSpec != spec {
			t.Errorf("collector %s holds an offer of its own: %+v", c.uid, *c.offerSpec)
		}
	}
	e.mu.Unlock()

	upd := failOneOffer(t, e)
	e.mu.Lock()
	failed := e.linkedCollectorLocked(upd)
	if failed.state != Failed || failed.err != "disk full" || len(failed.failed) != 1 || failed.offerSpec != spec {
		t.Fatalf("failed collector: state %s, detail %+v", failed.state, *failed.offerDetail)
	}
	for _, c := range e.collectors {
		if c != failed && (c.state != Offered || c.err != "" || c.failed != nil) {
			t.Errorf("collector %s changed with another's failure: %s %q %v", c.uid, c.state, c.err, c.failed)
		}
	}
	e.mu.Unlock()

	if _, err := e.RetryFleet("edge"); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	if failed.state != Offered || failed.err != "" || failed.failed != nil || failed.offerSpec != spec {
		t.Fatalf("retried collector: state %s, detail %+v", failed.state, *failed.offerDetail)
	}
	e.mu.Unlock()
}

// A detail with nothing left in it is given back; setters write nothing
// when the value is the one the shared detail already reads.
func TestDetailOwnedOnlyWhileItHoldsSomething(t *testing.T) {
	e := &Engine{}
	c := newCollector([16]byte{1})
	c.setErr("")
	c.setAssign("")
	c.setProgress(nil)
	c.setOffer(noSpec, [16]byte{})
	c.shed()
	if c.offerDetail != noOffer {
		t.Fatalf("zero writes gave the record a detail: %+v", *c.offerDetail)
	}
	c.setAssign("two fleets of priority 10 match")
	if c.offerDetail == noOffer || c.assign == "" {
		t.Fatal("an assignment error was not kept")
	}
	c.setAssign("")
	c.shed()
	if c.offerDetail != noOffer {
		t.Fatalf("an emptied detail was kept: %+v", *c.offerDetail)
	}
	a := e.specLocked("p", "1.0.0", []byte{1, 2}, nil, offerKey{os: "linux"})
	b := e.specLocked("p", "1.0.0", []byte{1, 2}, nil, offerKey{os: "linux"})
	d := e.specLocked("p", "1.0.0", []byte{1, 2}, []byte{3}, offerKey{os: "linux"})
	if a != b || a == d || e.specLocked("", "", nil, nil, offerKey{}) != noSpec {
		t.Fatalf("specs: same %t, with content distinct %t", a == b, a != d)
	}
	for i := range maxSharedSpecs + 1 {
		e.specLocked("p", "1.0.0", []byte{byte(i), byte(i >> 8)}, nil, offerKey{})
	}
	if e.specs.Len() > maxSharedSpecs {
		t.Fatalf("%d specs kept, bound %d", e.specs.Len(), maxSharedSpecs)
	}
}

// An offer read back from the store has no content hash (it is not
// persisted); the next evaluation gives it back, so that a status naming
// the offer by its file's content hash is still recognised.
func TestEvaluationRestoresTheContentHash(t *testing.T) {
	e, _, reg := buildPairs(t, 1)
	defer reg.Close()
	defer e.Close()
	e.SetEstate(testEstate("0.149.1"))
	e.mu.Lock()
	defer e.mu.Unlock()
	for uid, c := range e.collectors {
		content := c.content
		if len(content) == 0 {
			t.Fatal("offer without a content hash")
		}
		c.setOffer(e.specLocked(c.pkg, c.offerVer, []byte(c.hash), nil, c.offer), c.to) // as restored
		e.evaluateLocked(map[uuid.UUID]struct{}{uid: {}})
		if c.content != content || c.state != Offered {
			t.Fatalf("after evaluation: state %s, content %x, want %x", c.state, c.content, content)
		}
	}
}
