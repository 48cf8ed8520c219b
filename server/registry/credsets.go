package registry

import (
	"sync"

	"github.com/myriarch/myriarch/internal/intern"
	"github.com/myriarch/myriarch/server/store"
)

// maxCredSets bounds the distinct credentials shared (the table starts
// over when full).
const maxCredSets = 10_000

// credSets shares equal credentials among agents' records: the agents of
// a token present the same one, and a record holds a pointer (one word)
// instead of the credential's four. Safe for concurrent use (Load builds
// agents on several goroutines).
type credSets struct {
	mu   sync.Mutex
	sets intern.Values[store.Credential] // guarded by mu
}

// share returns the shared credential equal to c.
func (s *credSets) share(c store.Credential) *store.Credential {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sets.Max = maxCredSets
	return s.sets.Of(c)
}
