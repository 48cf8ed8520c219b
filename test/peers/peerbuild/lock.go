package peerbuild

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// fileLock is an exclusive, process-wide lock on a file. The kernel releases
// it when the holder dies, so a crashed build never blocks later runs.
type fileLock struct {
	f *os.File
}

// acquireLock blocks until it holds the lock on path or ctx ends. It logs once
// when another process holds the lock, so a waiting test says why it waits.
func acquireLock(ctx context.Context, log *slog.Logger, path string) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file %s: %w", path, err)
	}
	announced := false
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if ok {
			return &fileLock{f: f}, nil
		}
		if !announced {
			log.Info("peers: another process is building the peers; waiting for its lock", "lock", path)
			announced = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for lock %s: %w", path, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// release drops the lock. Closing the descriptor is what releases it.
func (l *fileLock) release() error {
	return l.f.Close()
}
