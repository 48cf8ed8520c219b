// Package intern shares the storage of equal strings. A fleet repeats the
// same strings everywhere (attribute keys, "linux", versions, event
// messages such as "offer installing → up_to_date (otelcol-contrib
// 0.149.1)"), and one copy of each instead of one per agent is a large part
// of what keeps an agent cheap to hold in memory.
package intern

// Table is a bounded set of shared strings. When it is full it starts over,
// so unique strings (host names, instance UIDs) cannot crowd out the common
// ones for long; it keeps the space its map grew to, so a table fed unique
// strings allocates only the strings. The zero value is ready to use. Not
// safe for concurrent use: callers hold their own lock or keep one Table
// per goroutine.
type Table struct {
	m   map[string]string
	Max int // strings held at most; 0 means 4096
}

// String returns the shared copy of s, making s the shared copy if there is none.
func (t *Table) String(s string) string {
	if v, ok := t.m[s]; ok {
		return v
	}
	t.add(s)
	return s
}

// Bytes returns the shared string equal to b; it allocates only the first time.
func (t *Table) Bytes(b []byte) string {
	if v, ok := t.m[string(b)]; ok { // no allocation for the lookup
		return v
	}
	s := string(b)
	t.add(s)
	return s
}

func (t *Table) add(s string) {
	limit := t.Max
	if limit <= 0 {
		limit = 4096
	}
	switch {
	case t.m == nil:
		// Grown as strings come: many tables live for one store scan or
		// one batch of rows and see a few strings.
		t.m = map[string]string{}
	case len(t.m) >= limit:
		clear(t.m) // starts over in the space it grew to: no map to grow again
	}
	t.m[s] = s
}

// Len is how many strings the table holds.
func (t *Table) Len() int { return len(t.m) }
