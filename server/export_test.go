package server

import "time"

// WithStartHook returns opts with hook called before each component of
// the server starts: an error it returns fails that start.
func WithStartHook(opts Options, hook func(component string) error) Options {
	opts.startHook = hook
	return opts
}

// WithNotifyBackoff returns opts with the webhook retries waiting d each.
func WithNotifyBackoff(opts Options, d time.Duration) Options {
	opts.notifyBackoff = func(int) time.Duration { return d }
	return opts
}
