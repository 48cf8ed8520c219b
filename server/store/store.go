// Package store defines what myriarchd persists and the interface the rest
// of the server persists it through (Store), with two implementations: the
// embedded SQLite store (store/sqlite), one instance's own, and the
// PostgreSQL store (store/postgres), which several instances share and
// which offers what they need of each other besides (Shared).
package store

import (
	"context"
	"errors"
	"time"

	"github.com/myriarch/myriarch/server/tokens"
)

// ErrNotFound is returned for a missing token or state key.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a unique name is already taken.
var ErrConflict = errors.New("conflict")

// ErrNotLeader refuses a write of decisions from an instance that does not
// lead the instances sharing the store (see Leadership.Campaign).
var ErrNotLeader = errors.New("this instance does not lead the instances sharing the store")

// Credential is what an agent authenticated with.
type Credential struct {
	Kind string `json:"kind"` // "token" or "certificate"
	ID   string `json:"id"`   // token id or certificate subject
}

// Event is one entry of an agent's history.
type Event struct {
	Seq     uint64    `json:"-"`
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Message string    `json:"message"`
}

// ChangedAt is when a's row last changed (Changed, or LastSeen when unset).
func (a *Agent) ChangedAt() time.Time {
	if a.Changed.IsZero() {
		return a.LastSeen
	}
	return a.Changed
}

// Agent is the persisted form of an agent. Description and Health are
// marshalled protobufs so the attribute rules can be re-applied on load.
type Agent struct {
	UID          [16]byte
	Credential   Credential
	Kind         string
	Description  []byte
	Capabilities uint64
	Health       []byte
	TokenLabels  map[string]string
	FirstSeen    time.Time
	LastSeen     time.Time
	// Changed is when what the row holds last changed: the message (or
	// feature change) that made it what it is; zero means LastSeen. Rows
	// are ordered by it, not by LastSeen, which heartbeats and closing
	// connections move on without changing the row (Batch.LastSeen): an
	// instance that sees an agent's connection close after the agent
	// reconnected elsewhere has a later LastSeen but an older row. Written,
	// not read back.
	Changed time.Time
	// Extra is JSON owned by features layered on the registry (offers, pairing).
	Extra []byte
	// EventsOnly: the row is written only to accompany new events (so
	// they are never stored without it); nothing else of it changed.
	EventsOnly bool
	// Instance is the instance (of several sharing a store) the agent has
	// a WebSocket open to, "" when none, and ConnectedAt when that
	// WebSocket opened, by that instance's clock: read with the row,
	// written by Batch.Connected and Batch.Disconnected only.
	Instance    string
	ConnectedAt time.Time
}

// Batch is one write-behind flush: agents to forget, agents to upsert,
// events to append and the per-agent event bound to enforce.
type Batch struct {
	// Delete removes agents with everything stored about them (events,
	// configuration assignments); applied before Agents, so an agent
	// forgotten and registered again in one batch is stored anew.
	Delete [][16]byte
	Agents []Agent
	// LastSeen updates rows without rewriting them (coalesced heartbeats).
	LastSeen  map[[16]byte]time.Time
	Events    map[[16]byte][]Event
	KeepEvent int
	// Reports to upsert (see Report); one older than the stored report of
	// its agent and feature is left out.
	Reports []Report
	// Relayed are events of agents whose rows another instance writes
	// (the one they are connected to), kept for it to take (TakeRelayed).
	Relayed map[[16]byte][]Event
	// Instance names the writing instance; Connected are agents that
	// opened a WebSocket to it, with when the newest opened: their rows
	// name it and that time then, unless they name a connection to
	// another instance that opened later (the agent's newest connection
	// is the one a row names; at the same time, the instance whose name
	// sorts last wins). Disconnected are those whose last one closed:
	// their rows name no instance — unless they name another by then.
	// Applied after Agents.
	Instance     string
	Connected    map[[16]byte]time.Time
	Disconnected [][16]byte
}

// Tokens persists enrollment tokens. Revoked tokens are kept so they stay refused.
type Tokens interface {
	InsertToken(ctx context.Context, t tokens.Token) error
	RevokeToken(ctx context.Context, id string, at time.Time) error
	ListTokens(ctx context.Context) ([]tokens.Token, error)
}

// Agents persists the agent registry.
type Agents interface {
	// LoadAgents returns every agent with its newest events (at most keepEvents each, oldest first).
	LoadAgents(ctx context.Context, keepEvents int) ([]Agent, map[[16]byte][]Event, error)
	// Write applies one batch atomically. An agent row older than the
	// stored one (an earlier Agent.Changed) leaves it as it is: an instance
	// that is not the agent's own (several sharing a database) and holds an
	// older copy never overwrites a newer description. A row written keeps
	// the later of the two last-seen times.
	Write(ctx context.Context, b Batch) error
}

// History reads one agent's history: instances sharing a store keep the
// histories of agents connected to other instances there only.
type History interface {
	// LoadEvents returns uid's newest events (at most keep, oldest first).
	LoadEvents(ctx context.Context, uid [16]byte, keep int) ([]Event, error)
}

// State is a small key-value space for server-wide state (rollouts, quarantines).
type State interface {
	PutState(ctx context.Context, key string, value []byte) error
	GetState(ctx context.Context, key string) ([]byte, error)
	DeleteState(ctx context.Context, key string) error
	ListState(ctx context.Context, prefix string) (map[string][]byte, error)
}

// Store is everything myriarchd persists. Implementations are safe for
// concurrent use; Close flushes and releases the database.
type Store interface {
	Tokens
	Agents
	State
	Configs
	Offers
	Reports
	History
	Accounts
	Audit
	Deliveries
	Close() error
}
