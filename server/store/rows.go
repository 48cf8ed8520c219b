package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/myriarch/myriarch/server/tokens"
)

// What every backend does the same way with the rows it reads.

// TokenFromRow completes t (id, name and hash already read) from a tokens
// row's labels (JSON), creation time and revocation time (nil: not
// revoked), both Unix nanoseconds.
func TokenFromRow(t *tokens.Token, labels []byte, created int64, revoked *int64) error {
	if err := json.Unmarshal(labels, &t.Labels); err != nil {
		return fmt.Errorf("token %s labels: %w", t.ID, err)
	}
	t.CreatedAt = time.Unix(0, created).UTC()
	if revoked != nil {
		r := time.Unix(0, *revoked).UTC()
		t.RevokedAt = &r
	}
	return nil
}

// LoadConcurrently is LoadAgents of a backend: the events are read (on a
// connection of their own) while the agents are.
func LoadConcurrently(ctx context.Context, agents func(context.Context) ([]Agent, error),
	events func(context.Context) (map[[16]byte][]Event, error)) ([]Agent, map[[16]byte][]Event, error) {
	type loaded struct {
		events map[[16]byte][]Event
		err    error
	}
	evc := make(chan loaded, 1)
	go func() {
		evs, err := events(ctx)
		evc <- loaded{evs, err}
	}()
	list, err := agents(ctx)
	ev := <-evc
	if err != nil {
		return nil, nil, fmt.Errorf("agents: %w", err)
	}
	if ev.err != nil {
		return nil, nil, fmt.Errorf("events: %w", ev.err)
	}
	return list, ev.events, nil
}
