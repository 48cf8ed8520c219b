package providers

import (
	"os"
	"strings"
)

// newEnvProvider publishes the process environment as strings.
func newEnvProvider() ContextProvider {
	return &staticContext{name: "env", data: func() map[string]any {
		out := map[string]any{}
		for _, kv := range os.Environ() {
			k, v, ok := strings.Cut(kv, "=")
			if ok && k != "" {
				out[k] = v
			}
		}
		return out
	}}
}
