package pairing

import (
	"slices"

	"github.com/google/uuid"
)

// claims are the updaters claiming each collector, in no order. A collector
// has one claimant almost always: it is a map entry of its own (one UID),
// and only the claimants beyond it are kept in a list (few collectors).
type claims struct {
	first map[uuid.UUID]uuid.UUID
	more  map[uuid.UUID][]uuid.UUID
}

func newClaims() claims {
	return claims{first: map[uuid.UUID]uuid.UUID{}, more: map[uuid.UUID][]uuid.UUID{}}
}

// add records that updater claims collector (once, however often added).
func (c *claims) add(collector, updater uuid.UUID) {
	first, ok := c.first[collector]
	switch {
	case !ok:
		c.first[collector] = updater
	case first == updater || slices.Contains(c.more[collector], updater):
	default:
		c.more[collector] = append(c.more[collector], updater)
	}
}

// remove forgets that updater claims collector.
func (c *claims) remove(collector, updater uuid.UUID) {
	first, ok := c.first[collector]
	if !ok {
		return
	}
	more := c.more[collector]
	if first == updater {
		if len(more) == 0 {
			delete(c.first, collector)
			return
		}
		c.first[collector], more = more[0], more[1:]
	} else {
		i := slices.Index(more, updater)
		if i < 0 {
			return
		}
		more = slices.Delete(more, i, i+1)
	}
	if len(more) == 0 {
		delete(c.more, collector)
	} else {
		c.more[collector] = more
	}
}

// appendTo appends collector's claimants to dst.
func (c *claims) appendTo(dst []uuid.UUID, collector uuid.UUID) []uuid.UUID {
	first, ok := c.first[collector]
	if !ok {
		return dst
	}
	return append(append(dst, first), c.more[collector]...)
}
