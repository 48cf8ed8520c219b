package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/server/admin"
)

// A request asked of an instance that does not lead is performed by the
// one that does, which writes what it changed before it answers; its
// result and its errors come back (an unavailable leader as such); the
// leader itself acts at once; without a leader the request fails as
// unavailable.
func TestRequestsReachTheLeader(t *testing.T) {
	dsn := testenv.Postgres(t)
	var flushed atomic.Int32
	var ranBy atomic.Value
	mk := func(lead bool) (*Requests, *atomic.Bool) {
		leading := new(atomic.Bool)
		leading.Store(lead)
		n := NewNotifier(open(t, dsn), slog.New(slog.DiscardHandler), NotifierOptions{})
		r := NewRequests(n, slog.New(slog.DiscardHandler), leading.Load, func() { flushed.Add(1) })
		r.timeout = 2 * time.Second
		r.Handle("double", func(_ context.Context, args []string) (string, error) {
			ranBy.Store(fmt.Sprint(leading.Load()))
			switch args[0] {
			case "missing":
				return "", errors.New("no fleet \"missing\"")
			case "busy":
				return "", fmt.Errorf("taking over: %w", admin.ErrUnavailable)
			}
			return args[0] + args[0], nil
		})
		n.Start()
		listening(t, n)
		n.Handle(func(c Change) error {
			switch c.Kind {
			case KindRequest:
				r.serve(context.Background(), c)
			case KindDone:
				r.done(c)
			}
			return nil
		})
		t.Cleanup(n.Close)
		return r, leading
	}
	leader, leaderLeads := mk(true)
	follower, _ := mk(false)

	if out, err := follower.Ask(context.Background(), "double", "ab"); err != nil || out != "abab" {
		t.Fatalf("asked of a follower: %q, %v", out, err)
	}
	if ranBy.Load() != "true" || flushed.Load() == 0 {
		t.Fatalf("performed by leading=%v, flushed %d times; want the leader, having flushed", ranBy.Load(), flushed.Load())
	}
	if _, err := follower.Ask(context.Background(), "double", "missing"); err == nil || err.Error() != `no fleet "missing"` || errors.Is(err, admin.ErrUnavailable) {
		t.Fatalf("the leader's error: %v", err)
	}
	if _, err := follower.Ask(context.Background(), "double", "busy"); !errors.Is(err, admin.ErrUnavailable) {
		t.Fatalf("the leader unavailable: %v", err)
	}
	if out, err := leader.Ask(context.Background(), "double", "x"); err != nil || out != "xx" {
		t.Fatalf("asked of the leader: %q, %v", out, err)
	}

	leaderLeads.Store(false)
	t0 := time.Now()
	if _, err := follower.Ask(context.Background(), "double", "y"); !errors.Is(err, ErrNoLeader) || !errors.Is(err, admin.ErrUnavailable) {
		t.Fatalf("without a leader: %v", err)
	}
	if time.Since(t0) > 10*time.Second {
		t.Fatal("a request without a leader waited past its timeout")
	}
}
