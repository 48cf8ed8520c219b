package stamp

import (
	"testing"
	"time"
)

func TestStampKeepsTheInstant(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name string
		t    time.Time
	}{
		{"zero", time.Time{}},
		{"now, with a monotonic reading", now},
		{"UTC, nanoseconds", time.Date(2026, 12, 5, 13, 30, 0, 123456789, time.UTC)},
		{"before 1970", time.Date(1969, 7, 20, 20, 17, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Of(tc.t).Time()
			if !got.Equal(tc.t) || got.IsZero() != tc.t.IsZero() {
				t.Fatalf("stamp of %v reads back %v", tc.t, got)
			}
		})
	}
	if Of(now.Add(time.Nanosecond)) <= Of(now) {
		t.Error("stamps do not order as their times")
	}
}
