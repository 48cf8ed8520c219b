package registry

import (
	"slices"
	"strconv"
	"strings"
	"sync"
)

// maxLabelSets bounds the distinct label sets shared; past it, further sets
// are kept per agent (as they would be without sharing).
const maxLabelSets = 10_000

// labelSets shares equal label maps among agents. Most agents of a fleet
// carry one of a few sets (their token's labels, their token's inventory
// labels), and a map per agent costs hundreds of bytes: at 100 000 agents,
// tens of megabytes for the same few maps. A shared map is never mutated:
// the registry replaces an agent's maps, it does not change them. Safe for
// concurrent use (Load builds agents on several goroutines).
type labelSets struct {
	mu   sync.Mutex
	sets map[string]map[string]string // guarded by mu; canonical encoding → the shared map
}

// share returns the shared map equal to m, registering m as it when it is
// the first of its contents. Empty and nil maps are returned as they are.
func (s *labelSets) share(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	key := canonicalLabels(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.sets[key]; ok {
		return c
	}
	if len(s.sets) >= maxLabelSets {
		return m
	}
	if s.sets == nil {
		s.sets = map[string]map[string]string{}
	}
	s.sets[key] = m
	return m
}

// canonicalLabels encodes m so that equal maps, and only they, encode
// equally: sorted keys, each key and value prefixed with its length.
func canonicalLabels(m map[string]string) string {
	keys := make([]string, 0, len(m))
	n := 0
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 8
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(n)
	for _, k := range keys {
		v := m[k]
		b.WriteString(strconv.Itoa(len(k)))
		b.WriteByte(':')
		b.WriteString(k)
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.WriteString(v)
	}
	return b.String()
}
