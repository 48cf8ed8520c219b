package attributes

import (
	"iter"
	"maps"
	"slices"
	"strings"
)

// View is an agent's attribute view: its non-identifying attributes, then
// its identifying ones (which win on equal keys), then its labels under
// LabelPrefix. A server holds one for every agent of the estate, so it is
// compact: the keys, sorted (views with the same keys share one list, see
// KeySets), and the values in their order packed into one string, those
// the fleet repeats referred to by number (see dictionary), behind one
// pointer that every holder copies. Immutable.
//
// The zero View is unknown (the agent has not described itself); a known
// View may be empty.
type View struct{ v *view }

type view struct {
	keys *[]string // sorted; possibly shared with other views (nil: none)
	// data holds the value of each key in turn: one allocation for all the
	// values instead of a string header for each and an allocation for
	// each value of its own (host names, instance UIDs). The values are
	// written as encoding.go says: inline, as a UUID's 16 bytes, or as the
	// number of a value the fleet repeats (see dictionary). The same values
	// may so be written two ways, depending on when the view was built.
	data string
}

// NewView builds the view of two cleaned lists and the labels; sets, when
// not nil, shares the key list.
func NewView(identifying, nonIdentifying, labels map[string]string, sets KeySets) View {
	m := make(map[string]string, len(identifying)+len(nonIdentifying)+len(labels))
	for k, val := range nonIdentifying {
		m[k] = val
	}
	for k, val := range identifying {
		m[k] = val
	}
	for k, val := range labels {
		m[LabelPrefix+k] = val
	}
	return viewOf(m, sets)
}

// ViewOf returns the entries of m as a view; a nil map is the unknown view.
func ViewOf(m map[string]string) View {
	if m == nil {
		return View{}
	}
	return viewOf(m, nil)
}

func viewOf(m map[string]string, sets KeySets) View {
	keys := slices.Sorted(maps.Keys(m))
	var small [16]string
	var smallRefs [16]uint32
	vals, refs := small[:0], smallRefs[:0]
	if len(keys) > len(small) {
		vals, refs = make([]string, 0, len(keys)), make([]uint32, 0, len(keys))
	}
	for _, k := range keys {
		vals = append(vals, m[k])
	}
	refs = refs[:len(vals)]
	values.refs(vals, refs)
	n := 0
	for i, val := range vals {
		n += encodedLen(val, refs[i])
	}
	var data strings.Builder
	data.Grow(n)
	for i, val := range vals {
		encode(&data, val, refs[i])
	}
	return View{&view{keys: shareKeys(keys, sets), data: data.String()}}
}

// Known reports whether the agent has described itself.
func (v View) Known() bool { return v.v != nil }

// Len is the number of attributes.
func (v View) Len() int {
	if v.v == nil {
		return 0
	}
	return len(list(v.v.keys))
}

// Get returns the value of k.
func (v View) Get(k string) (string, bool) {
	if v.v == nil {
		return "", false
	}
	i, ok := slices.BinarySearch(list(v.v.keys), k)
	if !ok {
		return "", false
	}
	off := 0
	for range i {
		off, _ = v.v.next(off)
	}
	val, _ := v.v.at(off)
	return val, true
}

// Value is Get's value ("" when k is not in the view).
func (v View) Value(k string) string {
	val, _ := v.Get(k)
	return val
}

// All yields the attributes sorted by key.
func (v View) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if v.v == nil {
			return
		}
		off := 0
		for _, k := range list(v.v.keys) {
			var val string
			val, off = v.v.at(off)
			if !yield(k, val) {
				return
			}
		}
	}
}

// AppendTo appends the attributes to dst, sorted by key.
func (v View) AppendTo(dst []KeyValue) []KeyValue {
	for k, val := range v.All() {
		dst = append(dst, KeyValue{k, val})
	}
	return dst
}

// Map returns the view as a new map; nil when unknown.
func (v View) Map() map[string]string {
	if v.v == nil {
		return nil
	}
	m := make(map[string]string, v.Len())
	for k, val := range v.All() {
		m[k] = val
	}
	return m
}

// Equal reports whether both views are unknown or hold the same attributes.
func (v View) Equal(o View) bool {
	if v.v == nil || o.v == nil {
		return v.v == o.v
	}
	if !slices.Equal(list(v.v.keys), list(o.v.keys)) {
		return false
	}
	if v.v.data == o.v.data {
		return true
	}
	// The same values may be written differently (see view.data): equal
	// bytes are equal values, other bytes are compared as values.
	off, ooff := 0, 0
	for range list(v.v.keys) {
		next, a := v.v.next(off)
		onext, b := o.v.next(ooff)
		if a != b {
			x, _ := v.v.at(off)
			y, _ := o.v.at(ooff)
			if x != y {
				return false
			}
		}
		off, ooff = next, onext
	}
	return true
}

// String formats the view as fmt formats the map of its attributes.
func (v View) String() string {
	if v.v == nil {
		return "map[]"
	}
	b := []byte("map[")
	first := true
	for k, val := range v.All() {
		if !first {
			b = append(b, ' ')
		}
		first = false
		b = append(b, k...)
		b = append(b, ':')
		b = append(b, val...)
	}
	return string(append(b, ']'))
}
