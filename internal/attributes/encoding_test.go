package attributes

import (
	"fmt"
	"maps"
	"testing"
)

// A UUID in canonical text is held as its 16 bytes and reads back as the
// same text; any other spelling of one is held as it was reported.
func TestUUIDValuesHeldAsBytes(t *testing.T) {
	for _, tc := range []struct {
		val     string
		compact bool
	}{
		{"0193a6f2-7c1e-7d3a-9b4f-00000000002a", true},
		{"00000000-0000-0000-0000-000000000000", true},
		{"0193A6F2-7C1E-7D3A-9B4F-00000000002A", false},
		{"{0193a6f2-7c1e-7d3a-9b4f-00000000002a}", false},
		{"urn:uuid:0193a6f2-7c1e-7d3a-9b4f-00000000002a", false},
		{"0193a6f2x7c1e-7d3a-9b4f-00000000002a", false},
		{"0193a6f2-7c1e-7d3a-9b4f-00000000002g", false},
		{"0193a6f27c1e7d3a9b4f00000000002a", false},
	} {
		t.Run(tc.val, func(t *testing.T) {
			m := map[string]string{"service.instance.id": tc.val}
			v := ViewOf(m)
			if got := v.Value("service.instance.id"); got != tc.val {
				t.Fatalf("reads back %q", got)
			}
			if compact := len(v.v.data) == 17; compact != tc.compact {
				t.Fatalf("held in %d bytes", len(v.v.data))
			}
			if !v.Equal(ViewOf(maps.Clone(m))) {
				t.Fatal("equal views differ")
			}
		})
	}
}

// A UUID the fleet repeats goes to the dictionary like any value; views
// holding it either way are equal.
func TestRepeatedUUIDs(t *testing.T) {
	const u = "0193a6f2-7c1e-7d3a-9b4f-0000000000ff"
	var views []View
	for i := range 2 * dictPromoteAt {
		views = append(views, ViewOf(map[string]string{"claim": u, "n": fmt.Sprint(i % 2)}))
	}
	first, last := views[0], views[len(views)-2]
	if len(last.v.data) >= len(first.v.data) {
		t.Fatalf("held in %d bytes, then %d: not taken", len(first.v.data), len(last.v.data))
	}
	if !first.Equal(last) || last.Value("claim") != u || first.Value("claim") != u {
		t.Fatalf("%v and %v", first, last)
	}
}
