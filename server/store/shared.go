package store

import (
	"context"
	"time"
)

// Shared is what a store that several instances share offers beside
// Store: it carries their notifications to each other, elects one of them
// to lead and reports on its connections. The PostgreSQL store is one, the
// SQLite store is not; callers find it with a type assertion.
type Shared interface {
	Store
	Notifications
	Leadership
	PoolStats() PoolStats
}

// Notifications carry short messages between the instances sharing a store.
type Notifications interface {
	// Notify sends payloads, in order, to every instance listening (this
	// one included).
	Notify(ctx context.Context, payloads []string) error
	// Listen opens a connection of its own that receives what is notified
	// from then on; Close it.
	Listen(ctx context.Context) (Subscription, error)
}

// Subscription receives notifications on a connection of its own.
type Subscription interface {
	// Next waits for the next payload; an error means the connection is
	// lost and what was notified meanwhile may be missed.
	Next(ctx context.Context) (string, error)
	Close() error
}

// Leadership elects one of the instances sharing a store to lead.
type Leadership interface {
	// Campaign opens a connection of its own for this instance to take and
	// hold the lead with. From the first campaign on, the store writes
	// decisions (offer and configuration records, configuration bodies,
	// server state) only while that connection holds the lead, and fails
	// them with ErrNotLeader otherwise: an instance that lost the lead
	// without noticing yet never overwrites what the next leader decided.
	// One campaign at a time; Close it.
	Campaign(ctx context.Context) (Candidacy, error)
}

// Candidacy is one instance's connection that takes and holds the lead.
type Candidacy interface {
	// Hold takes the lead when no instance holds it, or checks that this
	// connection still holds it; false when another instance leads. An
	// error means the connection and with it the lead are lost: Close it
	// and campaign again.
	Hold(ctx context.Context) (bool, error)
	// Close gives the lead up.
	Close() error
}

// PoolStats sample a store's connection pool.
type PoolStats struct {
	// Acquired and Idle are the connections in use and ready now; Max
	// bounds them together.
	Acquired, Idle, Max int32
	// Acquires counts the connections taken; Waited those taken only after
	// waiting for one to come free (or be opened), for Wait in all.
	Acquires, Waited int64
	Wait             time.Duration
}
