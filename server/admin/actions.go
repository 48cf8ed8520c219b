package admin

import (
	"context"
	"fmt"
	"sync"
)

// Requests carries operator actions to the instance that performs them
// (with several instances on one store, the leading one: cluster.Requests).
type Requests interface {
	// Handle sets what this instance does for op when it is asked.
	Handle(op string, fn func(ctx context.Context, args []string) (string, error))
	// Ask has the performing instance act on op (this one when it leads).
	Ask(ctx context.Context, op string, args ...string) (string, error)
}

// Actions are a feature's operator actions that change what only the
// leading instance decides (retry a collector, pause a fleet…): routes call
// Do, which acts here, or has the leader act when the store is shared.
type Actions struct {
	remote  Requests
	leading func() bool

	mu    sync.Mutex
	local map[string]func(ctx context.Context, args []string) (string, error) // guarded by mu
}

// NewActions makes a feature's actions; remote nil acts here. leading
// says whether the feature decides now (an instance taking the lead over
// refuses actions until it does).
func NewActions(remote Requests, leading func() bool) *Actions {
	return &Actions{remote: remote, leading: leading, local: map[string]func(context.Context, []string) (string, error){}}
}

// Add sets what op does. Call before serving.
func (a *Actions) Add(op string, fn func(ctx context.Context, args []string) (string, error)) {
	a.mu.Lock()
	a.local[op] = fn
	a.mu.Unlock()
	if a.remote != nil {
		a.remote.Handle(op, func(ctx context.Context, args []string) (string, error) {
			if !a.leading() {
				return "", fmt.Errorf("%s: this instance is taking the lead over; try again: %w", op, ErrUnavailable)
			}
			return fn(ctx, args)
		})
	}
}

// Do performs op with args and returns its result.
func (a *Actions) Do(ctx context.Context, op string, args ...string) (string, error) {
	if a.remote != nil {
		return a.remote.Ask(ctx, op, args...)
	}
	a.mu.Lock()
	fn := a.local[op]
	a.mu.Unlock()
	if fn == nil {
		return "", fmt.Errorf("unknown action %q", op)
	}
	return fn(ctx, args)
}
