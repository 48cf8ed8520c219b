package attributes

import (
	"encoding/binary"
	"iter"
	"maps"
	"slices"
	"strings"
)

// View is an agent's attribute view: its non-identifying attributes, then
// its identifying ones (which win on equal keys), then its labels under
// LabelPrefix. A server holds one for every agent of the estate, so it is
// compact: the keys, sorted (views with the same keys share one list, see
// KeySets), and the values in their order packed into one string, behind
// one pointer that every holder copies. Immutable.
//
// The zero View is unknown (the agent has not described itself); a known
// View may be empty.
type View struct{ v *view }

type view struct {
	keys *[]string // sorted; possibly shared with other views (nil: none)
	// data holds the value of each key in turn, each preceded by its
	// length as a uvarint: one allocation for all the values instead of a
	// string header for each and an allocation for each value of its own
	// (host names, instance UIDs). A value read is a substring of it.
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
	var prefix [binary.MaxVarintLen64]byte
	n := 0
	for _, val := range m {
		n += len(binary.AppendUvarint(prefix[:0], uint64(len(val)))) + len(val)
	}
	var data strings.Builder
	data.Grow(n)
	for _, k := range keys {
		data.Write(binary.AppendUvarint(prefix[:0], uint64(len(m[k]))))
		data.WriteString(m[k])
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
		n, w := v.v.next(off)
		off += w + n
	}
	n, w := v.v.next(off)
	return v.v.data[off+w : off+w+n], true
}

// next reads the length of the value at off in data: the value's length
// and the width of its prefix.
func (v *view) next(off int) (n, w int) {
	var x uint64
	for shift := 0; ; shift += 7 {
		b := v.data[off+w]
		w++
		x |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return int(x), w
		}
	}
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
			n, w := v.v.next(off)
			off += w
			if !yield(k, v.v.data[off:off+n]) {
				return
			}
			off += n
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
	return v.v.data == o.v.data && slices.Equal(list(v.v.keys), list(o.v.keys))
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
