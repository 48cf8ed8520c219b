package providers

import "context"

// staticContext publishes fixed data once and holds it: env, local.
type staticContext struct {
	name string
	data func() map[string]any
}

var _ ContextProvider = (*staticContext)(nil)

func (s *staticContext) Name() string { return s.name }

func (s *staticContext) Run(ctx context.Context, set func(map[string]any)) error {
	set(s.data())
	<-ctx.Done()
	return nil
}
