package configs

import (
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/internal/configrender"
)

func TestRecordEncoding(t *testing.T) {
	p := persisted{persistedFields: persistedFields{Fleet: "edge", Blueprint: "df/gw", Input: "in", Revision: "rev",
		Assigned: strings.Repeat("a", 64), Desired: strings.Repeat("b", 64), Applied: strings.Repeat("c", 64),
		Reported: reported{Hash: strings.Repeat("d", 64), Status: StatusFailed, Error: "ünknown type"}, Effective: "e", Error: "err",
		FailedWhy: "no FAILED report"},
		Failed: []string{strings.Repeat("f", 64), strings.Repeat("0", 64)},
		Warnings: []configrender.Warning{{Kind: configrender.WarningReceiverDropped, Component: "filelog/app", Variable: "${site.logdir}", Source: "app"},
			{Kind: configrender.WarningReceiverDropped, Component: "filelog/files", Source: "files", Reason: "the dynamic provider docker has no mapping"}}}
	str := func(b []byte) string { return string(b) }
	data := p.marshal()
	var q persisted
	if err := q.unmarshal(data, str); err != nil || !q.equal(p) {
		t.Fatalf("round trip: %v\n%+v\n%+v", err, q, p)
	}
	var empty persisted
	if err := empty.unmarshal(persisted{}.marshal(), str); err != nil || !empty.equal(persisted{}) {
		t.Fatalf("empty: %v %+v", err, empty)
	}
	js, _ := json.Marshal(p)
	var fromJSON persisted
	if err := fromJSON.unmarshal(js, str); err != nil || !fromJSON.equal(p) {
		t.Fatalf("JSON: %v", err)
	}
	for i := range len(data) - 1 {
		var r persisted
		if err := r.unmarshal(data[:i], str); err == nil {
			t.Fatalf("a record cut at %d bytes reads", i)
		}
	}
	if err := new(persisted).unmarshal(append(data, 0), str); err == nil {
		t.Fatal("trailing bytes read")
	}
	if err := new(persisted).unmarshal([]byte{9, 0}, str); err == nil || !strings.Contains(err.Error(), "format 9") {
		t.Fatalf("unknown format: %v", err)
	}
}

// A record stored before warnings and failure reasons reads as before.
func TestRecordFormat2Reads(t *testing.T) {
	p := persisted{persistedFields: persistedFields{Fleet: "edge", Assigned: strings.Repeat("a", 64), Source: "attributes", Wave: 2},
		Failed: []string{strings.Repeat("f", 64)}}
	var b []byte
	b = append(b, 2)
	for _, s := range p.strings(2) {
		b = appendString(b, *s)
	}
	b = appendUvarint(b, 1)
	b = appendString(b, p.Failed[0])
	b = appendUvarint(b, 2)
	b = appendUvarint(b, 0)
	var q persisted
	if err := q.unmarshal(b, func(b []byte) string { return string(b) }); err != nil || !q.equal(p) {
		t.Fatalf("format 2: %v\n%+v", err, q)
	}
}

func appendUvarint(b []byte, n uint64) []byte { return binary.AppendUvarint(b, n) }

func appendString(b []byte, s string) []byte { return append(appendUvarint(b, uint64(len(s))), s...) }
