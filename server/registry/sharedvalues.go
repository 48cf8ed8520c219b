package registry

import (
	"sync"

	"github.com/myriarch/myriarch/internal/intern"
)

// maxShared bounds the distinct values a sharedValues holds (it starts
// over when full).
const maxShared = 10_000

// sharedValues shares equal values among agents' records: the agents of a
// token present the same credential, the agents connected to one instance
// name the same instance, and a record holds a pointer (one word) instead
// of the value. Safe for concurrent use (Load builds agents on several
// goroutines).
type sharedValues[T comparable] struct {
	mu   sync.Mutex
	vals intern.Values[T] // guarded by mu
}

// share returns the shared value equal to v.
func (s *sharedValues[T]) share(v T) *T {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vals.Max = maxShared
	return s.vals.Of(v)
}
