package intern

import "testing"

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
