package registry

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

func TestInternerSharesAndStaysBounded(t *testing.T) {
	var in interner
	a := in.intern(strings.Repeat("x", 40) + "offer installing → up_to_date")
	b := in.intern(strings.Repeat("x", 40) + "offer installing → up_to_date") // built anew: other bytes
	if unsafe.StringData(a) != unsafe.StringData(b) {
		t.Error("equal messages do not share storage")
	}
	for i := range 3 * maxInterned {
		in.intern(fmt.Sprintf("linked to updater %d", i))
	}
	if len(in.m) > maxInterned {
		t.Errorf("interner holds %d strings, bound %d", len(in.m), maxInterned)
	}
	c := in.intern(a)
	if c != a {
		t.Errorf("intern changed the value: %q", c)
	}
}
