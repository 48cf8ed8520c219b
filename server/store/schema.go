package store

import "fmt"

// SchemaTooNewError refuses a database that a newer myriarchd migrated:
// this binary does not know its tables, so it must not write to them.
type SchemaTooNewError struct {
	Found int // the database's schema version
	Known int // the newest version this binary migrates to
}

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("database schema version %d is newer than this myriarchd (%d): run a myriarchd at least as new as the one that migrated it", e.Found, e.Known)
}

// NewestEvents returns the events of evs (one agent's, in sequence order)
// that a store keeps: those within keep sequence numbers of the newest,
// as Write trims them. It returns nil when none are kept.
func NewestEvents(evs []Event, keep int) []Event {
	if len(evs) == 0 {
		return nil
	}
	newest := int64(evs[len(evs)-1].Seq)
	i := 0
	for i < len(evs) && int64(evs[i].Seq) <= newest-int64(keep) {
		i++
	}
	if i == len(evs) {
		return nil
	}
	return evs[i:len(evs):len(evs)]
}
