package service

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// restartErr stands for the updater's restart request after a self-update.
type restartErr struct{}

func (restartErr) Error() string { return "restart requested" }
func (restartErr) ExitCode() int { return 3 }

// phases records what serve reports, safely for the test's goroutine.
type phases struct {
	mu  sync.Mutex
	got []phase
}

func (p *phases) report(ph phase) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, ph)
}

func (p *phases) list() []phase {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got)
}

// waitFor polls until cond holds or a deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// noLeak fails the test if it ends with more goroutines than it started
// with (go.uber.org/goleak is not a requirement of this module).
func noLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		waitFor(t, "the test's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
	})
}

func TestServe(t *testing.T) {
	noLeak(t)
	boom := errors.New("boom")
	tests := []struct {
		name string
		// fn is the service body; release ends it when the test is done
		// (closed after serve returns, so a timed-out fn does not leak).
		fn func(ctx context.Context, release <-chan struct{}) error
		// stop sends a stop request once fn runs.
		stop       bool
		timeout    time.Duration
		wantErr    error
		wantCode   int
		wantPhases []phase
	}{
		{
			name:       "fn returns nil on its own",
			fn:         func(context.Context, <-chan struct{}) error { return nil },
			wantPhases: []phase{phaseStarting, phaseRunning},
		},
		{
			name:       "fn fails",
			fn:         func(context.Context, <-chan struct{}) error { return fmt.Errorf("run: %w", boom) },
			wantErr:    boom,
			wantCode:   1,
			wantPhases: []phase{phaseStarting, phaseRunning},
		},
		{
			name:       "fn asks to be restarted",
			fn:         func(context.Context, <-chan struct{}) error { return fmt.Errorf("updater: %w", restartErr{}) },
			wantErr:    restartErr{},
			wantCode:   3,
			wantPhases: []phase{phaseStarting, phaseRunning},
		},
		{
			name: "stop first, then fn ends",
			fn: func(ctx context.Context, _ <-chan struct{}) error {
				<-ctx.Done()
				return nil
			},
			stop:       true,
			wantPhases: []phase{phaseStarting, phaseRunning, phaseStopping},
		},
		{
			name: "stop, then fn fails while stopping",
			fn: func(ctx context.Context, _ <-chan struct{}) error {
				<-ctx.Done()
				return boom
			},
			stop:       true,
			wantErr:    boom,
			wantCode:   1,
			wantPhases: []phase{phaseStarting, phaseRunning, phaseStopping},
		},
		{
			name: "stop times out",
			fn: func(_ context.Context, release <-chan struct{}) error {
				<-release // ignores its context
				return nil
			},
			stop:       true,
			timeout:    time.Millisecond,
			wantErr:    errStopTimeout,
			wantCode:   1,
			wantPhases: []phase{phaseStarting, phaseRunning, phaseStopping},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			running := make(chan struct{})
			fn := func(ctx context.Context) error {
				close(running)
				return tt.fn(ctx, release)
			}
			requests := make(chan string)
			classify := func(r string) request {
				if r == "stop" {
					return requestStop
				}
				return requestIgnore
			}
			timeout := tt.timeout
			if timeout == 0 {
				timeout = time.Minute
			}
			var ph phases
			result := make(chan error, 1)
			go func() { result <- serve(context.Background(), fn, requests, classify, ph.report, timeout) }()
			<-running
			if tt.stop {
				requests <- "interrogate" // ignored
				requests <- "stop"
			}
			var err error
			select {
			case err = <-result:
			case <-time.After(10 * time.Second):
				t.Fatal("serve did not return")
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("serve = %v, want %v", err, tt.wantErr)
			}
			if got := ExitCode(err); got != tt.wantCode {
				t.Errorf("ExitCode = %d, want %d", got, tt.wantCode)
			}
			if got := ph.list(); !slices.Equal(got, tt.wantPhases) {
				t.Errorf("phases = %v, want %v", got, tt.wantPhases)
			}
		})
	}
}

// TestServeReturnsWithoutARequest is the self-update restart: fn ends on
// its own and serve returns while no one ever sends a request.
func TestServeReturnsWithoutARequest(t *testing.T) {
	noLeak(t)
	end := make(chan struct{})
	fn := func(context.Context) error {
		<-end
		return restartErr{}
	}
	var ph phases
	result := make(chan error, 1)
	go func() {
		result <- serve(context.Background(), fn, nil, func(int) request { return requestStop }, ph.report, time.Minute)
	}()
	waitFor(t, "running", func() bool { return slices.Contains(ph.list(), phaseRunning) })
	close(end)
	select {
	case err := <-result:
		if ExitCode(err) != 3 {
			t.Errorf("serve = %v, exit code %d", err, ExitCode(err))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve kept waiting for a stop request after fn returned")
	}
}

func TestExitCode(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("x"), 1},
		{restartErr{}, 3},
		{fmt.Errorf("wrapped: %w", restartErr{}), 3},
		{context.Canceled, 1},
	} {
		if got := ExitCode(tt.err); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}
