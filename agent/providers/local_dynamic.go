package providers

import (
	"context"
	"strconv"

	"github.com/myriarch/myriarch/internal/vars"
)

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
		ms[i] = vars.Mapping{ID: strconv.Itoa(i), Vars: v, Processors: it.Processors}
	}
	return ms
}
