package registry

import (
	"fmt"
	"slices"
	"testing"
)

func TestKeySetsShareEqualListsOnly(t *testing.T) {
	tests := []struct {
		name  string
		a, b  []string
		share bool
	}{
		{"equal", []string{"service.instance.id", "service.name"}, []string{"service.instance.id", "service.name"}, true},
		{"boundary moved", []string{"a:1", "b"}, []string{"a", "1:b"}, false},
		{"joined", []string{"ab"}, []string{"a", "b"}, false},
		{"extra key", []string{"a"}, []string{"a", "b"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s keySets
			a, b := s.Share(tt.a), s.Share(tt.b)
			if &(*a)[0] != &tt.a[0] {
				t.Fatal("the first list of its contents is not the one kept")
			}
			if got := a == b; got != tt.share {
				t.Fatalf("shared = %v, want %v", got, tt.share)
			}
			if !slices.Equal(*b, tt.b) {
				t.Fatalf("Share(%v) = %v", tt.b, b)
			}
		})
	}
}

func TestKeySetsBounded(t *testing.T) {
	var s keySets
	for i := range maxKeySets + 10 {
		s.Share([]string{fmt.Sprint(i)})
	}
	over := []string{"beyond"}
	if got := s.Share(over); &(*got)[0] != &over[0] || len(s.sets) != maxKeySets {
		t.Fatalf("past the bound: %d lists kept, want %d, and the list itself back", len(s.sets), maxKeySets)
	}
}
