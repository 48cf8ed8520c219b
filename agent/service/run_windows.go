package service

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"time"

	kservice "github.com/kardianos/service"
)

// Run runs fn until ctx ends, the SCM stops the service, or (interactive)
// Ctrl-C arrives, and returns fn's result.
func Run(ctx context.Context, fn func(context.Context) error) error {
	if kservice.Interactive() {
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
		return fn(ctx)
	}
	p := &program{parent: ctx, fn: fn}
	s, err := kservice.New(p, Config("", ""))
	if err != nil {
		return err
	}
	if err := s.Run(); err != nil {
		return err
	}
	return p.result()
}

// program adapts fn to the SCM's start/stop calls.
type program struct {
	parent context.Context
	fn     func(context.Context) error

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func (p *program) Start(kservice.Service) error {
	ctx, cancel := context.WithCancel(p.parent)
	p.mu.Lock()
	p.cancel, p.done = cancel, make(chan struct{})
	p.mu.Unlock()
	go func() {
		err := p.fn(ctx)
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	return nil
}

func (p *program) Stop(kservice.Service) error {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-time.After(2 * time.Minute):
		return errors.New("updater did not stop within 2 minutes")
	}
}

func (p *program) result() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}
