package attributes

import (
	"iter"
	"maps"
	"slices"
)

// View is an agent's attribute view: its non-identifying attributes, then
// its identifying ones (which win on equal keys), then its labels under
// LabelPrefix. A server holds one for every agent of the estate, so it is
// compact: the keys, sorted (views with the same keys share one list, see
// KeySets), and the values in their order, behind one pointer that every
// holder copies. Immutable.
//
// The zero View is unknown (the agent has not described itself); a known
// View may be empty.
type View struct{ v *view }

type view struct {
	keys []string // sorted; possibly shared with other views
	vals []string // vals[i] is the value of keys[i]
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
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = m[k]
	}
	if sets != nil && len(keys) > 0 {
		keys = sets.Share(keys)
	}
	return View{&view{keys: keys, vals: vals}}
}

// Known reports whether the agent has described itself.
func (v View) Known() bool { return v.v != nil }

// Len is the number of attributes.
func (v View) Len() int {
	if v.v == nil {
		return 0
	}
	return len(v.v.vals)
}

// Get returns the value of k.
func (v View) Get(k string) (string, bool) {
	if v.v == nil {
		return "", false
	}
	i, ok := slices.BinarySearch(v.v.keys, k)
	if !ok {
		return "", false
	}
	return v.v.vals[i], true
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
		for i, k := range v.v.keys {
			if !yield(k, v.v.vals[i]) {
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
	m := make(map[string]string, len(v.v.vals))
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
	return slices.Equal(v.v.keys, o.v.keys) && slices.Equal(v.v.vals, o.v.vals)
}

// String formats the view as fmt formats the map of its attributes.
func (v View) String() string {
	if v.v == nil {
		return "map[]"
	}
	b := []byte("map[")
	for i, k := range v.v.keys {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, k...)
		b = append(b, ':')
		b = append(b, v.v.vals[i]...)
	}
	return string(append(b, ']'))
}
