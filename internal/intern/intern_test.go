package intern

import (
	"fmt"
	"runtime"
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

// A table fed unique strings allocates the strings and nothing more: it
// starts over in the map it has, not in a new one to grow again.
func TestStartingOverAllocatesNoMap(t *testing.T) {
	tab := Table{Max: 512}
	const n = 20 * 512
	bufs := make([][]byte, 2*n)
	for i := range bufs {
		bufs[i] = fmt.Appendf(nil, "host-%08d", i)
	}
	for _, b := range bufs[:n] { // the map reaches its size
		tab.Bytes(b)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, b := range bufs[n:] {
		tab.Bytes(b)
	}
	runtime.ReadMemStats(&after)
	if got := after.Mallocs - before.Mallocs; got > n+n/100 {
		t.Fatalf("%d unique strings took %d allocations", n, got)
	}
	if tab.Len() > 512 {
		t.Fatalf("table holds %d strings, bound 512", tab.Len())
	}
}

// A table that sees a few strings (one store scan, one batch of rows)
// allocates for those, not for a map sized for thousands.
func TestFewStringsAllocateLittle(t *testing.T) {
	bufs := [][]byte{[]byte("token"), []byte("t1"), []byte("collector"), []byte("myriarchd-0")}
	allocated := func() uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 100 {
			var tab Table
			for range 10 {
				for _, b := range bufs {
					tab.Bytes(b)
				}
			}
			if tab.Len() != len(bufs) {
				t.Fatalf("table holds %d strings, want %d", tab.Len(), len(bufs))
			}
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / 100
	}
	if got := allocated(); got > 1024 {
		t.Fatalf("a table of %d strings allocated %d bytes", len(bufs), got)
	}
}
