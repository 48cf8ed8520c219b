package attributes

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
)

// A value is taken once it was seen dictPromoteAt times; values too short,
// too long or seen fewer times are not, and what was taken reads back.
func TestDictionaryTakesRepeatedValues(t *testing.T) {
	d := newDictionary(100, 1000)
	ref := func(v string) uint32 {
		var r [1]uint32
		d.refs([]string{v}, r[:])
		return r[0]
	}
	for i := range dictPromoteAt - 1 {
		if r := ref("otelcol-contrib"); r != 0 {
			t.Fatalf("taken after %d sightings", i+1)
		}
	}
	r := ref("otelcol-contrib")
	if r == 0 {
		t.Fatalf("not taken after %d sightings", dictPromoteAt)
	}
	if got := d.value(r - 1); got != "otelcol-contrib" {
		t.Fatalf("value %d = %q", r-1, got)
	}
	if again := ref("otelcol-contrib"); again != r {
		t.Fatalf("taken again: %d, then %d", r, again)
	}
	for _, v := range []string{"ab", strings.Repeat("x", dictMaxLen+1)} {
		for range 2 * dictPromoteAt {
			if ref(v) != 0 {
				t.Fatalf("a value of %d bytes was taken", len(v))
			}
		}
	}
	for i := range 3 * dictWindow {
		if ref(fmt.Sprintf("host-%06d", i)) != 0 {
			t.Fatalf("a value seen once was taken")
		}
	}
	if n, b := d.size(); n != 1 || b != len("otelcol-contrib") {
		t.Fatalf("holds %d values of %d bytes, want 1 of %d", n, b, len("otelcol-contrib"))
	}
}

// Counts start over when the window is full: a value must repeat among
// at most dictWindow candidates to be taken.
func TestDictionaryCountsInAWindow(t *testing.T) {
	d := newDictionary(100, 1000)
	one := make([]uint32, 1)
	for range dictPromoteAt - 1 {
		d.refs([]string{"site-042"}, one)
	}
	for i := range dictWindow {
		d.refs([]string{fmt.Sprintf("host-%06d", i)}, one)
	}
	if d.refs([]string{"site-042"}, one); one[0] != 0 {
		t.Fatal("counted across a full window")
	}
}

// The dictionary holds at most its bound of values and of bytes; past
// them, values are not taken and those taken still read back.
func TestDictionaryIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name               string
		maxEntries, maxLen int
		valueLen           int
	}{
		{"entries", 50, 1 << 20, 10},
		{"bytes", 1000, 500, 10},
		{"several chunks", 3 * dictChunkLen, 1 << 20, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDictionary(tc.maxEntries, tc.maxLen)
			refs := make([]uint32, 1)
			taken := map[uint32]string{}
			for i := range 4 * dictChunkLen {
				v := fmt.Sprintf("%0*d", tc.valueLen, i)
				for range dictPromoteAt {
					d.refs([]string{v}, refs)
				}
				if refs[0] != 0 {
					taken[refs[0]-1] = v
				}
			}
			n, b := d.size()
			if n > tc.maxEntries || b > tc.maxLen || n != len(taken) {
				t.Fatalf("holds %d values (%d taken) of %d bytes; bounds %d, %d", n, len(taken), b, tc.maxEntries, tc.maxLen)
			}
			if want := min(tc.maxEntries, tc.maxLen/tc.valueLen, 4*dictChunkLen); n != want {
				t.Fatalf("holds %d values, want %d", n, want)
			}
			for id, v := range taken {
				if got := d.value(id); got != v {
					t.Fatalf("value %d = %q, want %q", id, got, v)
				}
			}
		})
	}
}

// Views built before and after a value was taken hold it differently,
// read it back the same, and are equal.
func TestViewsReferToRepeatedValues(t *testing.T) {
	shared := "value of " + t.Name()
	var views []View
	for i := range 2 * dictPromoteAt {
		views = append(views, ViewOf(map[string]string{"a": shared, "host.name": fmt.Sprintf("%s-host-%d", t.Name(), i), "z": shared}))
	}
	first, last := views[0], views[len(views)-1]
	if len(last.v.data) >= len(first.v.data) {
		t.Fatalf("the last view holds %d bytes, the first %d: the repeated value was not taken", len(last.v.data), len(first.v.data))
	}
	for i, v := range views {
		want := map[string]string{"a": shared, "host.name": fmt.Sprintf("%s-host-%d", t.Name(), i), "z": shared}
		if !maps.Equal(v.Map(), want) || v.Value("z") != shared || v.Value("host.name") != want["host.name"] {
			t.Fatalf("view %d reads %v, want %v", i, v, want)
		}
	}
	again := ViewOf(first.Map())
	if again.v.data == first.v.data || !again.Equal(first) || !first.Equal(again) {
		t.Fatalf("views of the same values written two ways are not equal (%q, %q)", first.v.data, again.v.data)
	}
	other := first.Map()
	other["z"] = shared + "!"
	if ViewOf(other).Equal(first) || first.Equal(ViewOf(other)) {
		t.Fatal("views of different values are equal")
	}
}

// Views are built and read from many goroutines at once (run with -race).
func TestViewsConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				m := map[string]string{"service.name": "concurrent-collector", "site.name": fmt.Sprintf("site-%02d", i%20),
					"host.name": fmt.Sprintf("host-%d-%d", g, i)}
				if v := ViewOf(m); !maps.Equal(v.Map(), m) {
					t.Errorf("view %v of %v", v, m)
					return
				}
			}
		})
	}
	wg.Wait()
}

// size is how many values the dictionary holds and their bytes.
func (d *dictionary) size() (entries, bytes int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n, d.bytes
}
