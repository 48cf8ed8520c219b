//go:build !windows

package service

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Run runs fn until ctx ends or SIGINT/SIGTERM arrives (systemd stops the
// unit with SIGTERM) and returns fn's result; the caller exits with
// ExitCode of it, and systemd's Restart=on-failure restarts a non-zero exit.
func Run(ctx context.Context, _ *slog.Logger, _ bool, fn func(context.Context) error) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return fn(ctx)
}
