// Package stamp keeps an instant in 8 bytes instead of time.Time's 24:
// for records the server holds for every agent of an estate.
package stamp

import "time"

// Stamp is an instant as Unix nanoseconds, 0 for the zero time. It keeps
// no monotonic reading or location: times read back compare, and
// subtract, by the wall clock. Stamps of instants after 1970 order as
// their times do, after the zero one.
type Stamp int64

// Of returns t's stamp.
func Of(t time.Time) Stamp {
	if t.IsZero() {
		return 0
	}
	return Stamp(t.UnixNano())
}

// Time reads the instant back (the zero time for 0), in UTC.
func (s Stamp) Time() time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(s)).UTC()
}

// IsZero reports whether s is the zero time's stamp.
func (s Stamp) IsZero() bool { return s == 0 }
