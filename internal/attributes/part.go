package attributes

import (
	"maps"
	"slices"
	"strings"
)

// Described is an agent's description as a server keeps it: the attribute
// view (see View) and what is needed to tell its identifying attributes
// from the non-identifying ones, without a map for each list (descriptions
// are the largest part of what a server holds per agent).
type Described struct {
	// View is the attribute view.
	View View
	// ident are the identifying keys, sorted (nil: none); agents
	// reporting the same keys share one list (see Describe).
	ident *[]string
	// hidden are the non-identifying values whose key is identifying too
	// (the view shows the identifying one); nil almost always.
	hidden map[string]string
}

// KeySets shares sorted key lists between descriptions: Describe and
// NewView ask it for the list to keep, which they never modify. nil keeps
// every list as built.
type KeySets interface {
	Share(keys []string) *[]string
}

// shareKeys returns the list to keep for keys (nil when empty): a
// description holds a pointer to it, one word instead of a slice's three.
func shareKeys(keys []string, sets KeySets) *[]string {
	switch {
	case len(keys) == 0:
		return nil
	case sets != nil:
		return sets.Share(keys)
	}
	return &keys
}

// list is the keys l points to.
func list(l *[]string) []string {
	if l == nil {
		return nil
	}
	return *l
}

// Describe builds the description of two cleaned lists and the labels.
func Describe(identifying, nonIdentifying, labels map[string]string, sets KeySets) Described {
	d := Described{View: NewView(identifying, nonIdentifying, labels, sets)}
	if len(identifying) > 0 {
		d.ident = shareKeys(slices.Sorted(maps.Keys(identifying)), sets)
	}
	for k, v := range nonIdentifying {
		if _, ok := identifying[k]; ok {
			if d.hidden == nil {
				d.hidden = map[string]string{}
			}
			d.hidden[k] = v
		}
	}
	return d
}

// Relabel returns d with other labels: a new view, the same attributes;
// sets is as for Describe.
func (d Described) Relabel(labels map[string]string, sets KeySets) Described {
	v := make(map[string]string, d.View.Len()+len(labels))
	for k, val := range d.View.All() {
		if !strings.HasPrefix(k, LabelPrefix) {
			v[k] = val
		}
	}
	for k, val := range labels {
		v[LabelPrefix+k] = val
	}
	d.View = viewOf(v, sets)
	return d
}

// Identifying is the identifying list.
func (d Described) Identifying() Part { return Part{d: d} }

// NonIdentifying is the non-identifying list.
func (d Described) NonIdentifying() Part { return Part{d: d, non: true} }

func (d Described) isIdent(k string) bool {
	_, ok := slices.BinarySearch(list(d.ident), k)
	return ok
}

// Part is one of an agent's reported attribute lists, read from its
// description. The zero Part is empty.
type Part struct {
	d   Described
	non bool
}

// Get returns the value of k in the list.
func (p Part) Get(k string) (string, bool) {
	if !p.non {
		if !p.d.isIdent(k) {
			return "", false
		}
		return p.d.View.Get(k)
	}
	if v, ok := p.d.hidden[k]; ok {
		return v, true
	}
	if p.d.isIdent(k) || strings.HasPrefix(k, LabelPrefix) {
		return "", false
	}
	return p.d.View.Get(k)
}

// Value is Get's value ("" when k is not in the list).
func (p Part) Value(k string) string {
	v, _ := p.Get(k)
	return v
}

// KeyValue is one attribute.
type KeyValue struct{ Key, Value string }

// AppendTo appends the list's entries to dst, in no particular order.
func (p Part) AppendTo(dst []KeyValue) []KeyValue {
	if !p.non {
		for _, k := range list(p.d.ident) {
			dst = append(dst, KeyValue{k, p.d.View.Value(k)})
		}
		return dst
	}
	for k, v := range p.d.View.All() {
		if !strings.HasPrefix(k, LabelPrefix) && !p.d.isIdent(k) {
			dst = append(dst, KeyValue{k, v})
		}
	}
	for k, v := range p.d.hidden {
		dst = append(dst, KeyValue{k, v})
	}
	return dst
}

// Map returns the list as a new map (empty, not nil, for an empty list).
func (p Part) Map() map[string]string {
	kvs := p.AppendTo(nil)
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}
