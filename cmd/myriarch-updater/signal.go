package main

import (
	"context"
	"os"
	"os/signal"
)

// signalContext ends ctx on Ctrl-C so `inspect --watch` exits cleanly.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt)
}
