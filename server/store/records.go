package store

import (
	"context"
	"time"
)

// Offers persists the offers engine's record of each collector (JSON owned
// by the engine): the decisions of the instance that computes rollouts.
type Offers interface {
	// LoadOffers returns every collector's record.
	LoadOffers(ctx context.Context) (map[[16]byte][]byte, error)
	// WriteOffers upserts records in one transaction.
	WriteOffers(ctx context.Context, records map[[16]byte][]byte) error
}

// Report is what an agent last told about one feature (its package
// statuses, its remote configuration's status): written by the instance it
// is connected to, for the instance that decides to act on it.
type Report struct {
	UID     [16]byte
	Feature string
	// At is when the report was received; a report never replaces a newer one.
	At   time.Time
	Data []byte
}

// Reports reads agents' reports and the events other instances relayed to
// the instance an agent is connected to (both written by Agents.Write).
type Reports interface {
	// LoadReports returns the reports of the given agents, every report
	// when uids is nil.
	LoadReports(ctx context.Context, uids [][16]byte) ([]Report, error)
	// RelayedAgents lists the agents with relayed events waiting.
	RelayedAgents(ctx context.Context) ([][16]byte, error)
	// TakeRelayed removes and returns the relayed events of uids, oldest
	// first (their sequence numbers mean nothing: the taker numbers them).
	TakeRelayed(ctx context.Context, uids [][16]byte) (map[[16]byte][]Event, error)
}
