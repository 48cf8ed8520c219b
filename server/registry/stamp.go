package registry

import "time"

// stamp is a time in 8 bytes instead of time.Time's 24: Unix nanoseconds,
// 0 for the zero time. It keeps no monotonic reading or location: times
// read back compare, and subtract, by the wall clock.
type stamp int64

func stampOf(t time.Time) stamp {
	if t.IsZero() {
		return 0
	}
	return stamp(t.UnixNano())
}

func (s stamp) time() time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(s))
}
