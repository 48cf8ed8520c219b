package providers

// newLocalProvider publishes providers.local.vars.
func newLocalProvider(v map[string]any) ContextProvider {
	return &staticContext{name: "local", data: func() map[string]any {
		if v == nil {
			return map[string]any{}
		}
		return v
	}}
}
