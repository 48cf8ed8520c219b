//go:build !windows

package service

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Run runs fn until ctx ends or SIGINT/SIGTERM arrives (systemd stops the
// unit with SIGTERM) and returns fn's result.
func Run(ctx context.Context, fn func(context.Context) error) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return fn(ctx)
}
