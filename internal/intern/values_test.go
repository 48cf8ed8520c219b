package intern

import (
	"runtime"
	"testing"
)

func TestValuesShareAndStayBounded(t *testing.T) {
	type cred struct{ kind, id string }
	tab := Values[cred]{Max: 10}
	a, b := tab.Of(cred{"token", "t1"}), tab.Of(cred{"token", "t1"})
	c := tab.Of(cred{"certificate", "t1"})
	if a != b || a == c || *c != (cred{"certificate", "t1"}) {
		t.Fatalf("shared %t, distinct apart %t, %+v", a == b, a != c, *c)
	}
	for i := range 100 {
		v := cred{"certificate", string(rune('a' + i))}
		if got := tab.Of(v); *got != v {
			t.Fatalf("Of(%+v) = %+v", v, *got)
		}
		if tab.Len() > 10 {
			t.Fatalf("table holds %d values, bound 10", tab.Len())
		}
	}
	// After starting over, a common value is shared again from its next use.
	if tab.Of(cred{"token", "t1"}) != tab.Of(cred{"token", "t1"}) {
		t.Error("not shared after the table started over")
	}
}

// Values fed unique values allocates one shared copy of each and no map.
func TestValuesStartingOverAllocatesNoMap(t *testing.T) {
	tab := Values[[2]uint64]{Max: 512}
	const n = 20 * 512
	for i := range n { // the map reaches its size
		tab.Of([2]uint64{uint64(i)})
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		tab.Of([2]uint64{uint64(n + i)})
	}
	runtime.ReadMemStats(&after)
	if got := after.Mallocs - before.Mallocs; got > n+n/100 {
		t.Fatalf("%d unique values took %d allocations", n, got)
	}
}
