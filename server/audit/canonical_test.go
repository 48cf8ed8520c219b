package audit_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/audit"
	"github.com/myriarch/myriarch/server/store"
)

// golden is a record whose every string needs the canonical escaping
// rules: the quote, the backslash, control characters by name and by
// code, and characters left as they are (DEL, <, >, &, U+2028, non-ASCII).
var golden = audit.Record{ID: 7, Time: time.Date(2025, 6, 1, 14, 0, 0, 1, time.FixedZone("CEST", 2*3600)), Actor: "alice", Role: "admin",
	Via: "api", Action: "token.create", Target: "token:edge", Source: "192.0.2.7:51234", RequestID: "r-1", Outcome: "ok",
	Detail: "a\"b\\c\b\f\n\r\t\x01\x1f\x7f<>&\u2028é😀"}

// The canonical JSON and the hash of a fixed record never change: every
// stored chain depends on them. (Computed apart, with the package
// documentation's Python.)
func TestCanonicalGolden(t *testing.T) {
	want := `{"id":7,"time":"2025-06-01T12:00:00.000000001Z","actor":"alice","role":"admin","via":"api","action":"token.create",` +
		`"target":"token:edge","source":"192.0.2.7:51234","requestId":"r-1","outcome":"ok","detail":"a\"b\\c\b\f\n\r\t\u0001\u001f` +
		"\x7f<>&\u2028é😀" + `"}`
	if got := string(golden.Canonical()); got != want {
		t.Fatalf("canonical JSON\n got %s\nwant %s", got, want)
	}
	if got := golden.HashAfter(store.AuditGenesis); got != "674a4eb9c391e9cd4055f3fb030be43b39970c7110fa21cbb12ea7016fff082a" {
		t.Fatalf("hash %s", got)
	}
}

// A record's JSON is its canonical JSON with prev and hash added, and
// reads back as the same record (as encoding/json writes it too, with <,
// >, & and U+2028 escaped).
func TestRecordJSON(t *testing.T) {
	r := golden
	r.Prev, r.Hash = store.AuditGenesis, golden.HashAfter(store.AuditGenesis)
	b, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	canon := string(golden.Canonical())
	if want := canon[:len(canon)-1] + `,"prev":"` + r.Prev + `","hash":"` + r.Hash + `"}`; string(b) != want {
		t.Fatalf("JSON\n got %s\nwant %s", b, want)
	}
	escaped, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range [][]byte{b, escaped} {
		var back audit.Record
		if err := json.Unmarshal(j, &back); err != nil {
			t.Fatal(err)
		}
		if !back.Time.Equal(r.Time) || back.Detail != r.Detail || back.HashAfter(back.Prev) != r.Hash {
			t.Fatalf("%s read back as %+v", j, back)
		}
	}
}
