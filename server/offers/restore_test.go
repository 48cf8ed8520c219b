package offers

import (
	"encoding/json"
	"testing"
	"unsafe"

	"github.com/google/uuid"
)

// Records read from the store (a follower mirroring the leader's, or an
// instance starting) share their strings and offer hash: a fleet's
// collectors hold the same few.
func TestRestoredRecordsShareStringsAndOffer(t *testing.T) {
	e := &Engine{}
	const rec = `{"state":"installed","package":"otelcol-contrib","version":"0.149.1","fleet":"edge","targetVersion":"0.149.1",` +
		`"hash":"190eb8f5e22ed8fbd8669114af56a5d8e6fb642bb4e5b4df77184d2b655dac76","mode":"binary","os":"linux","arch":"amd64",` +
		`"updater":"dd70fcca-c993-4000-8000-0000000016a3"}`
	var cs []*collector
	for range 2 {
		var p persisted
		if err := json.Unmarshal([]byte(rec), &p); err != nil {
			t.Fatal(err)
		}
		c := newCollector(uuid.New())
		e.restoreLocked(c, &p)
		cs = append(cs, c)
	}
	a, b := cs[0], cs[1]
	if a.state != Installed || a.pkg != "otelcol-contrib" || a.offerVer != "0.149.1" || a.fleet != "edge" || a.target != "0.149.1" ||
		a.offer != (offerKey{mode: "binary", os: "linux", arch: "amd64"}) || len(a.hash) != 32 || a.hash[0] != 0x19 || a.to.String() != "dd70fcca-c993-4000-8000-0000000016a3" {
		t.Fatalf("restored %+v", *a)
	}
	for name, pair := range map[string][2]string{"state": {a.state, b.state}, "package": {a.pkg, b.pkg}, "version": {a.offerVer, b.offerVer},
		"fleet": {a.fleet, b.fleet}, "target": {a.target, b.target}, "os": {a.offer.os, b.offer.os}, "arch": {a.offer.arch, b.offer.arch}} {
		if unsafe.StringData(pair[0]) != unsafe.StringData(pair[1]) {
			t.Errorf("%s not shared", name)
		}
	}
	if a.offerSpec != b.offerSpec || unsafe.StringData(a.hash) != unsafe.StringData(b.hash) {
		t.Error("the offer is not shared")
	}
}
