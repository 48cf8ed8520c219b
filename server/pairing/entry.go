package pairing

import (
	"hash/maphash"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/intern"
	"github.com/myriarch/myriarch/internal/stamp"
	"github.com/myriarch/myriarch/server/store"
)

// state is a pairing state as the index keeps it; none: not evaluated, or
// neither a collector nor an updater.
type state uint8

const (
	none state = iota
	linked
	ambiguous
	noUpdater
	unlinked
)

var stateNames = [...]string{none: "", linked: Linked, ambiguous: Ambiguous, noUpdater: NoUpdater, unlinked: Unlinked}

func stateOf(name string) state {
	for s, n := range stateNames {
		if n == name {
			return state(s)
		}
	}
	return none
}

// reason is which rule an unlinked updater fails (0: none).
type reason uint8

const (
	reasonCredential reason = iota + 1
	reasonHostName
	reasonUnknownCollector
	reasonNoClaim
	reasonSuperseded
)

var reasonNames = [...]string{0: "", reasonCredential: ReasonCredential, reasonHostName: ReasonHostName,
	reasonUnknownCollector: ReasonUnknownCollector, reasonNoClaim: ReasonNoClaim, reasonSuperseded: ReasonSuperseded}

// entry is one agent as the index keeps it: its facts and its pairing
// (80 bytes; the index holds every agent of the estate).
type entry struct {
	uid  uuid.UUID
	cred *store.Credential // shared (Index.creds)
	// host is a digest of the host name (0: none reported): pairing only
	// compares host names. Two names of one digest (a chance of 2⁻⁶⁴ per
	// pair, with a seed of the process no peer knows) would count as the
	// same host.
	host  uint64
	claim uuid.UUID
	// peer is a collector's linked updater, or the collector an updater is
	// linked to or ambiguous for.
	peer     uuid.UUID
	lastSeen stamp.Stamp
	role     Role
	online   bool
	hasClaim bool
	state    state
	reason   reason // an unlinked updater's
}

// set takes a's facts, keeping the pairing; creds shares its credential.
func (e *entry) set(a Agent, creds *intern.Values[store.Credential]) {
	e.uid, e.cred, e.host, e.claim = a.UID, creds.Of(a.Cred), hostDigest(a.Host), a.Claim
	e.lastSeen, e.role, e.online, e.hasClaim = stamp.Of(a.LastSeen), a.Role, a.Online, a.HasClaim
}

func (e *entry) setUpdater(s state, r reason, collector uuid.UUID) {
	e.state, e.reason, e.peer = s, r, collector
}

var hostSeed = maphash.MakeSeed()

// hostDigest is the digest of a host name kept in an entry (0: none).
func hostDigest(host string) uint64 {
	if host == "" {
		return 0
	}
	return max(maphash.String(hostSeed, host), 1)
}
