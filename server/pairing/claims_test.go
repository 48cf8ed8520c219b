package pairing

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/google/uuid"
)

// Claims added and removed in any order read back as the set of claimants
// left, each once, and a collector nobody claims any more holds nothing.
func TestClaimsAddAndRemove(t *testing.T) {
	c := uuid.New()
	u := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	type step struct {
		add  bool
		u    int
		want []int
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"one", []step{{true, 0, []int{0}}, {true, 0, []int{0}}, {false, 0, nil}}},
		{"first goes, the next takes its place", []step{{true, 0, []int{0}}, {true, 1, []int{0, 1}}, {true, 2, []int{0, 1, 2}},
			{false, 0, []int{1, 2}}, {true, 2, []int{1, 2}}, {false, 2, []int{1}}, {false, 1, nil}}},
		{"a later one goes", []step{{true, 0, []int{0}}, {true, 1, []int{0, 1}}, {false, 1, []int{0}}, {true, 1, []int{0, 1}}}},
		{"removing what is not there", []step{{false, 0, nil}, {true, 1, []int{1}}, {false, 0, []int{1}}, {false, 1, nil}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newClaims()
			for i, s := range tc.steps {
				if s.add {
					cl.add(c, u[s.u])
				} else {
					cl.remove(c, u[s.u])
				}
				var want []uuid.UUID
				for _, w := range s.want {
					want = append(want, u[w])
				}
				got := cl.appendTo(nil, c)
				if !slices.Equal(sorted(got), sorted(want)) {
					t.Fatalf("step %d: claimants %v, want %v", i, got, want)
				}
				if len(want) <= 1 && len(cl.more) != 0 || len(want) == 0 && len(cl.first) != 0 {
					t.Fatalf("step %d: holds %d first and %d further lists for %d claimants", i, len(cl.first), len(cl.more), len(want))
				}
			}
		})
	}
}

func sorted(s []uuid.UUID) []uuid.UUID {
	return slices.SortedFunc(slices.Values(s), func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
}

// An entry stays within the 80-byte size class: the index holds one for
// every agent of the estate.
func TestEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n > 80 {
		t.Fatalf("entry is %d bytes, want at most 80", n)
	}
}
