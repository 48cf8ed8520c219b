package intern

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

func TestSharesAndStaysBounded(t *testing.T) {
	tab := Table{Max: 100}
	a := tab.String(strings.Repeat("x", 40) + "offer installing → up_to_date")
	b := tab.String(strings.Repeat("x", 40) + "offer installing → up_to_date") // built anew: other bytes
	c := tab.Bytes([]byte(strings.Repeat("x", 40) + "offer installing → up_to_date"))
	if unsafe.StringData(a) != unsafe.StringData(b) || unsafe.StringData(a) != unsafe.StringData(c) {
		t.Error("equal strings do not share storage")
	}
	if a != c {
		t.Errorf("Bytes changed the value: %q", c)
	}
	for i := range 1000 {
		tab.String(fmt.Sprintf("linked to updater %d", i))
		if tab.Len() > 100 {
			t.Fatalf("table holds %d strings, bound 100", tab.Len())
		}
	}
	// After starting over, a common string is shared again from its next use.
	d := tab.String(a)
	e := tab.Bytes([]byte(a))
	if unsafe.StringData(d) != unsafe.StringData(e) {
		t.Error("not shared after the table started over")
	}
}
