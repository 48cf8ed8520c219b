package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/myriarch/myriarch/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

// TestServeReturnsWithoutARequest is the self-update restart: fn ends on
// its own and serve returns while no one ever sends a request.
func TestServeReturnsWithoutARequest(t *testing.T) {
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
	testkit.WaitFor(t, "running", func() bool { return slices.Contains(ph.list(), phaseRunning) })
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
