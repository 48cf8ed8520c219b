//go:build linux || darwin || freebsd || netbsd || openbsd

package peerbuild

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

func TestLockExcludesASecondHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	first, err := acquireLock(context.Background(), log, path)
	if err != nil {
		t.Fatal(err)
	}
	// A flock belongs to an open file description, so a second open in this
	// process contends exactly as another process would.
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		l, err := acquireLock(ctx, log, path)
		if err == nil {
			l.release()
		}
		got <- err
	}()
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("second acquire while held: err = %v, want context.Canceled", err)
	}
	if err := first.release(); err != nil {
		t.Fatal(err)
	}
	second, err := acquireLock(context.Background(), log, path)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	second.release()
}

func TestLockWaitIsAnnounced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	held, err := acquireLock(context.Background(), slog.New(slog.DiscardHandler), path)
	if err != nil {
		t.Fatal(err)
	}
	defer held.release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := acquireLock(ctx, log, path); err == nil {
		t.Fatal("acquired a held lock")
	}
	if !strings.Contains(logs.String(), "waiting for its lock") {
		t.Errorf("waiting was not logged: %q", logs.String())
	}
}

func TestLockBadPath(t *testing.T) {
	_, err := acquireLock(context.Background(), slog.New(slog.DiscardHandler), filepath.Join(t.TempDir(), "no", "lock"))
	if err == nil || !strings.Contains(err.Error(), "lock") {
		t.Errorf("lock in a missing directory: err = %v", err)
	}
}
