package server

// WithStartHook returns opts with hook called before each component of
// the server starts: an error it returns fails that start.
func WithStartHook(opts Options, hook func(component string) error) Options {
	opts.startHook = hook
	return opts
}
