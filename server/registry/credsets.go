package registry

import (
	"sync"

	"github.com/myriarch/myriarch/server/store"
)

// maxCredSets bounds the distinct credentials shared; past it, further
// ones are kept per agent.
const maxCredSets = 10_000

// credSets shares equal credentials among agents' records: the agents of
// a token present the same one, and a record holds a pointer (one word)
// instead of the credential's four. A shared credential is never
// mutated. Safe for concurrent use (Load builds agents on several
// goroutines).
type credSets struct {
	mu   sync.Mutex
	sets map[store.Credential]*store.Credential // guarded by mu
}

// share returns the shared credential equal to c.
func (s *credSets) share(c store.Credential) *store.Credential {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.sets[c]; ok {
		return p
	}
	p := &c
	if len(s.sets) >= maxCredSets {
		return p
	}
	if s.sets == nil {
		s.sets = map[store.Credential]*store.Credential{}
	}
	s.sets[c] = p
	return p
}
