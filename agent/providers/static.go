package providers

import (
	"context"
	"os"
	"strings"

	"github.com/myriarch/myriarch/internal/vars"
)

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

// newLocalProvider publishes providers.local.vars.
func newLocalProvider(v map[string]any) ContextProvider {
	return &staticContext{name: "local", data: func() map[string]any {
		if v == nil {
			return map[string]any{}
		}
		return v
	}}
}

// localDynamic publishes one mapping per providers.local_dynamic item, with
// ids "0", "1", … in item order.
type localDynamic struct{ items []LocalDynamicItem }

var _ DynamicProvider = (*localDynamic)(nil)

func (l *localDynamic) Name() string { return "local_dynamic" }

func (l *localDynamic) Run(ctx context.Context, set func([]vars.Mapping)) error {
	set(localDynamicMappings(l.items))
	<-ctx.Done()
	return nil
}

func localDynamicMappings(items []LocalDynamicItem) []vars.Mapping {
	ms := make([]vars.Mapping, len(items))
	for i, it := range items {
		v := it.Vars
		if v == nil {
			v = map[string]any{}
		}
		ms[i] = vars.Mapping{ID: itoa(i), Vars: v, Processors: it.Processors}
	}
	return ms
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	for ; i > 0; i /= 10 {
		n--
		b[n] = byte('0' + i%10)
	}
	return string(b[n:])
}
