package registry

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/myriarch/myriarch/internal/attributes"
)

// maxKeySets bounds the distinct key lists shared; past it, further lists
// are kept per agent.
const maxKeySets = 10_000

// keySets shares equal sorted key lists (an agent's identifying keys, its
// view's keys) among agents: nearly every collector reports the same ones.
// Safe for concurrent use. A shared list is never mutated.
type keySets struct {
	// last is the list shared last: most agents report the same keys, and
	// several goroutines build agents at once (Load), so they find it here
	// without taking mu.
	last atomic.Pointer[[]string]

	mu   sync.Mutex
	sets map[string]*[]string // guarded by mu; the keys, each after its length → the shared list
}

var _ attributes.KeySets = (*keySets)(nil)

// Share implements attributes.KeySets.
func (s *keySets) Share(keys []string) *[]string {
	if len(keys) == 0 {
		return nil
	}
	if last := s.last.Load(); last != nil && slices.Equal(*last, keys) {
		return last
	}
	var buf [256]byte
	b := buf[:0]
	for _, k := range keys {
		b = strconv.AppendInt(b, int64(len(k)), 10)
		b = append(b, ':')
		b = append(b, k...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.sets[string(b)]; ok { // no allocation for the lookup
		s.last.Store(c)
		return c
	}
	if len(s.sets) >= maxKeySets {
		return &keys
	}
	if s.sets == nil {
		s.sets = map[string]*[]string{}
	}
	s.sets[string(b)] = &keys
	s.last.Store(&keys)
	return &keys
}
