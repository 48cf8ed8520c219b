package providers

import (
	"os"
	"strings"
)

// newEnvProvider publishes the environment variables cfg allows, as strings.
func newEnvProvider(cfg EnvConfig) ContextProvider {
	return &staticContext{name: "env", data: func() map[string]any {
		out := map[string]any{}
		for _, kv := range os.Environ() {
			k, v, ok := strings.Cut(kv, "=")
			if ok && k != "" && cfg.allows(k) {
				out[k] = v
			}
		}
		return out
	}}
}
