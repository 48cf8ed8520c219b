package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// component is one part of the server: New starts the parts in order, and
// stops those started, in reverse, when one fails; Close stops them all in
// reverse. A start that fails leaves nothing of its own behind.
type component struct {
	name  string
	start func(ctx context.Context) error
	stop  func(ctx context.Context) error // nil: nothing to stop
}

// parts are the components started, in order.
type parts struct {
	mu      sync.Mutex
	started []component // guarded by mu
}

// start starts cs in order. When one fails (or hook, called before each
// start with the component's name, does), those already started are
// stopped in reverse and the error names the component.
func (p *parts) start(ctx context.Context, cs []component, hook func(name string) error) error {
	for _, c := range cs {
		var err error
		if hook != nil {
			err = hook(c.name)
		}
		if err == nil {
			err = c.start(ctx)
		}
		if err != nil {
			return errors.Join(fmt.Errorf("%s: %w", c.name, err), p.stop(context.WithoutCancel(ctx)))
		}
		p.add(c)
	}
	return nil
}

// add counts c as started.
func (p *parts) add(c component) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started = append(p.started, c)
}

// stop stops the components started, the last first, each once.
func (p *parts) stop(ctx context.Context) error {
	p.mu.Lock()
	started := p.started
	p.started = nil
	p.mu.Unlock()
	var errs []error
	for _, c := range slices.Backward(started) {
		if c.stop == nil {
			continue
		}
		if err := c.stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", c.name, err))
		}
	}
	return errors.Join(errs...)
}
