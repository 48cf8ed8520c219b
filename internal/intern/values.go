package intern

// Values is a bounded set of shared values of a comparable type, each held
// once behind a pointer: a record that holds a pointer (one word) instead
// of the value (credentials: four) and shares it with the records of
// equal values. When full it starts over, as Table does; a shared value
// is never written. The zero value is ready to use. Not safe for
// concurrent use.
type Values[T comparable] struct {
	m   map[T]*T
	Max int // values held at most; 0 means 4096
}

// Of returns the shared pointer to a value equal to v.
func (t *Values[T]) Of(v T) *T {
	if p, ok := t.m[v]; ok {
		return p
	}
	limit := t.Max
	if limit <= 0 {
		limit = 4096
	}
	switch {
	case t.m == nil:
		t.m = make(map[T]*T, 16)
	case len(t.m) >= limit:
		clear(t.m) // starts over in the space it grew to
	}
	p := &v
	t.m[v] = p
	return p
}

// Len is how many values the table holds.
func (t *Values[T]) Len() int { return len(t.m) }
