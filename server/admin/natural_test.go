package admin

import "testing"

func TestNaturalCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"0.99.0", "0.149.0", -1},
		{"0.149.0", "0.149.0", 0},
		{"0.149.1", "0.149.0", 1},
		{"0.149.0", "0.149.0-m.1", -1},
		{"0.149.0-m.2", "0.149.0-m.10", -1},
		{"007", "7", 0},
		{"", "0.1.0", -1},
		{"v1", "1", 1},
	} {
		if got := naturalCompare(tc.a, tc.b); got != tc.want {
			t.Errorf("naturalCompare(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
