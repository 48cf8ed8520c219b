package vars

import (
	"strconv"
	"strings"
)

// Set is one vars set: the context, with one provider's data replaced by a
// dynamic mapping's vars when mapping is non-nil.
type Set struct {
	data    *Data
	mapping *Mapping
	// flat, when set, is the context instead of data: see FlatSet;
	// flatMapping then holds the variables of one mapping of provider
	// flatProvider (FlatMappingSet).
	flat         map[string]string
	flatProvider string
	flatMapping  map[string]string
}

// FlatSet returns a context-only vars set over flat string data: the
// variable ${a.b.c} is the entry "a.b.c" of m, exactly as written (no
// nesting), which is how attribute views are keyed. A nil map has no
// variables.
func FlatSet(m map[string]string) Set {
	if m == nil {
		m = map[string]string{}
	}
	return Set{flat: m}
}

// ContextSet returns the context-only vars set.
func (d *Data) ContextSet() Set { return Set{data: d} }

// MappingSet returns the vars set of d.Mappings()[i].
func (d *Data) MappingSet(i int) Set { return Set{data: d, mapping: &d.mappings[i]} }

// FlatMappingSet is FlatSet with one mapping of the dynamic provider
// provider: its variables (keyed like ctx, "docker.container.name") stand
// for every variable of that provider, the context for the others.
func FlatMappingSet(ctx map[string]string, provider string, mapping map[string]string) Set {
	s := FlatSet(ctx)
	if mapping == nil {
		mapping = map[string]string{}
	}
	s.flatProvider, s.flatMapping = provider, mapping
	return s
}

// Name is "context" or "<provider>-<id>".
func (s Set) Name() string {
	if s.mapping == nil {
		return ContextSet
	}
	return s.mapping.SetName()
}

// Lookup resolves a variable path (provider first). Existence counts: a
// present null is found.
func (s Set) Lookup(path []string) (any, bool) {
	var cur any
	var ok bool
	switch {
	case s.mapping != nil && path[0] == s.mapping.Provider:
		cur, ok = s.mapping.Vars, true
	case s.flat != nil:
		m := s.flat
		if s.flatMapping != nil && path[0] == s.flatProvider {
			m = s.flatMapping
		}
		v, ok := m[strings.Join(path, ".")]
		if !ok {
			return nil, false
		}
		return v, true
	case s.data != nil:
		cur, ok = s.data.context[path[0]]
	}
	if !ok {
		return nil, false
	}
	for _, seg := range path[1:] {
		switch c := cur.(type) {
		case map[string]any:
			cur, ok = c[seg]
			if !ok {
				return nil, false
			}
		case []any:
			i, ok := listIndex(seg)
			if !ok || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func listIndex(seg string) (int, bool) {
	if seg == "" {
		return 0, false
	}
	for i := 0; i < len(seg); i++ {
		if seg[i] < '0' || seg[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(seg)
	return n, err == nil
}

// evalState carries what a render learned about the set it used.
type evalState struct {
	set Set
	// used is set when a variable of the set's mapping provider yielded.
	used bool
	// seen, when set, is told the name of every variable that yields.
	seen func(name string)
}

// eval evaluates one reference: the first alternative that yields wins.
// byVar reports whether a variable (not a constant) yielded.
func (st *evalState) eval(r *Reference) (v any, byVar bool, err error) {
	for i := range r.Alts {
		a := &r.Alts[i]
		if a.Const {
			return a.Text, false, nil
		}
		if v, ok := st.set.Lookup(a.Path); ok {
			if st.set.mapping != nil && a.Path[0] == st.set.mapping.Provider {
				st.used = true
			}
			if st.seen != nil {
				st.seen(strings.Join(a.Path, "."))
			}
			return v, true, nil
		}
	}
	return nil, false, &MissingError{Reference: r.Source}
}

// render evaluates t. present is false when t is a whole-value reference to
// null, meaning the key or list element holding it is removed.
func (st *evalState) render(t *Template) (v any, present bool, err error) {
	if t.whole {
		v, byVar, err := st.eval(t.parts[0].ref)
		if err != nil {
			return nil, false, err
		}
		if !byVar {
			return v, true, nil
		}
		if v == nil {
			return nil, false, nil
		}
		return deepCopy(v), true, nil
	}
	out, err := st.interpolate(t, false, nil)
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// interpolate writes t's text with every reference's value: the text as
// unescaped (raw false) or as written (raw true), values through quote
// when it is not nil.
func (st *evalState) interpolate(t *Template, raw bool, quote func(string) string) (string, error) {
	var b strings.Builder
	b.Grow(t.sizeHint)
	for _, p := range t.parts {
		if p.ref == nil {
			if raw {
				b.WriteString(p.raw)
			} else {
				b.WriteString(p.text)
			}
			continue
		}
		v, _, err := st.eval(p.ref)
		if err != nil {
			return "", err
		}
		if quote != nil {
			b.WriteString(quote(scalarText(v)))
		} else {
			b.WriteString(scalarText(v))
		}
	}
	return b.String(), nil
}

// Render evaluates t against set. A whole-value reference resolved by a
// variable keeps the value's type; ok is false when that value is null
// (the holder should be removed). Errors are *MissingError.
func (t *Template) Render(set Set) (v any, ok bool, err error) {
	st := evalState{set: set}
	return st.render(t)
}

// Expand renders t for a consumer that has its own $-escaping, such as
// the OpenTelemetry Collector: literal text stays exactly as written (an
// escaped $${…} keeps both dollars, a collector reference is untouched),
// and every reference's value is passed through quote, which makes it
// literal for the consumer. Errors are *MissingError.
func (t *Template) Expand(set Set, quote func(string) string) (string, error) {
	st := evalState{set: set}
	return st.interpolate(t, true, quote)
}

// ExpandSeen is Expand that tells seen the name ("provider.key…") of
// every variable that yields, and returns, for a template that is exactly
// one reference (Whole), the name of the variable that gave its value (""
// when a constant did): a consumer that keeps the types of its sources (a
// number a provider published, a string of the attribute view) decides
// the rendered type by it. seen may be nil. Errors are *MissingError.
func (t *Template) ExpandSeen(set Set, quote func(string) string, seen func(name string)) (value, name string, err error) {
	st := evalState{set: set, seen: func(n string) {
		name = n
		if seen != nil {
			seen(n)
		}
	}}
	v, err := st.interpolate(t, true, quote)
	if !t.whole {
		name = ""
	}
	return v, name, err
}

// Whole reports whether the template is exactly one reference.
func (t *Template) Whole() bool { return t.whole }
