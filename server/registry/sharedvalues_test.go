package registry

import (
	"testing"
	"unsafe"

	"github.com/myriarch/myriarch/server/store"
)

// Agents presenting equal credentials share one.
func TestCredentialsShared(t *testing.T) {
	var s sharedValues[store.Credential]
	a := s.share(store.Credential{Kind: "token", ID: "t1"})
	b := s.share(store.Credential{Kind: "token", ID: "t1"})
	c := s.share(store.Credential{Kind: "certificate", ID: "t1"})
	if a != b || a == c || *c != (store.Credential{Kind: "certificate", ID: "t1"}) {
		t.Fatalf("shared %t, distinct kinds apart %t, %+v", a == b, a != c, *c)
	}
}

// An agent's record stays within the 192-byte size class: every instance
// holds one for every agent of the estate.
func TestAgentRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(agent{}); n > 192 {
		t.Fatalf("agent record is %d bytes, want at most 192", n)
	}
}

// A record holds no feature JSON when there is none, whether the row gave
// nil or an empty slice.
func TestNoExtraHeldForNone(t *testing.T) {
	for _, b := range [][]byte{nil, {}} {
		if p := extraOf(b); p != nil {
			t.Fatalf("extraOf(%#v) holds %v", b, p)
		}
	}
	if p := extraOf([]byte(`{}`)); p == nil || string(*p) != `{}` {
		t.Fatal("extraOf dropped feature JSON")
	}
}
