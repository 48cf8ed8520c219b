// Package providerreport sends the host's providers to myriarchd, so the
// configuration of the collector the updater looks after can follow the
// host: an OpAMP custom message (internal/providerwire) on connect and
// whenever the data changes, at most one per MinInterval, the newest data
// winning, never per heartbeat. Each message is encoded within the bounds
// myriarchd enforces; what is cut is counted in it.
//
// What leaves the host is what the providers publish: the agent and host
// providers (host.ip and host.mac unless switched off), the env provider
// only for the variables providers.env.allow names, local and
// local_dynamic as configured, and one mapping per running Docker
// container (id, name, image, labels, command line, ports, log path).
package providerreport

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/myriarch/myriarch/agent/providers"
	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/internal/providerwire"
)

// Encode turns a providers snapshot into the message's data, within the
// bounds: at most MaxMappings mappings per provider and MaxKeys variables
// per object, values cut at MaxLen bytes, and, when the whole is still over
// MaxBytes, the mappings of the largest dynamic provider halved until it
// fits. The cuts are counted in the document's truncated.
func Encode(s providers.Snapshot, seq uint64) []byte {
	w := providerwire.Snapshot{Context: map[string]map[string]any{}, Dynamic: map[string][]providerwire.Mapping{}, Seq: seq,
		Truncated: map[string]int{}}
	for name, v := range s.Context {
		obj, _ := v.(map[string]any)
		w.Context[name] = bound(obj, "context."+name, w.Truncated)
	}
	for _, m := range s.Mappings {
		list := w.Dynamic[m.Provider]
		if len(list) >= providerwire.MaxMappings {
			w.Truncated["dynamic."+m.Provider+" mappings over 1000"]++
			continue
		}
		wm := providerwire.Mapping{ID: attributes.Clean(m.ID), Mapping: bound(m.Vars, "dynamic."+m.Provider, w.Truncated)}
		if len(m.Processors) > 0 {
			procs := m.Processors
			if len(procs) > providerwire.MaxProcessors {
				w.Truncated["dynamic."+m.Provider+" processors over 8"] += len(procs) - providerwire.MaxProcessors
				procs = procs[:providerwire.MaxProcessors]
			}
			wm.Processors = procs
		}
		w.Dynamic[m.Provider] = append(list, wm)
	}
	for {
		data, err := json.Marshal(w)
		if err != nil {
			// Provider data is normalized JSON; this cannot happen.
			panic(fmt.Sprintf("providerreport: encoding a snapshot: %v", err))
		}
		if len(data) <= providerwire.MaxBytes && providerwire.CheckShape(data) == nil {
			return data
		}
		largest := ""
		for _, p := range slices.Sorted(maps.Keys(w.Dynamic)) {
			if largest == "" || len(w.Dynamic[p]) > len(w.Dynamic[largest]) {
				largest = p
			}
		}
		if largest == "" || len(w.Dynamic[largest]) == 0 {
			// Only the context is left and it is too large: send none of it.
			w.Truncated["context over 1 MiB or 65536 values"] += len(w.Context)
			w.Context = map[string]map[string]any{}
			continue
		}
		keep := len(w.Dynamic[largest]) / 2
		w.Truncated["dynamic."+largest+" mappings over 1 MiB or 65536 values"] += len(w.Dynamic[largest]) - keep
		w.Dynamic[largest] = w.Dynamic[largest][:keep]
	}
}

// bound copies an object keeping at most MaxKeys variables in all
// (counted depth first, keys in order), cutting long keys and values, and
// sending an object or list nested deeper than MaxVarDepth as its JSON
// text.
func bound(obj map[string]any, what string, cuts map[string]int) map[string]any {
	n := 0
	var walk func(v any, depth int) any
	walk = func(v any, depth int) any {
		switch v.(type) {
		case map[string]any, []any:
			if depth > providerwire.MaxVarDepth {
				cuts[what+" values nested over "+strconv.Itoa(providerwire.MaxVarDepth)+" (sent as JSON text)"]++
				b, _ := json.Marshal(v)
				return attributes.Clean(string(b))
			}
		}
		switch x := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(x))
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if n >= providerwire.MaxKeys {
					cuts[what+" keys over 256"]++
					continue
				}
				if len(k) > providerwire.MaxLen {
					cuts[what+" keys over 4096 bytes"]++
					continue
				}
				n++
				out[k] = walk(x[k], depth+1)
			}
			return out
		case []any:
			out := make([]any, 0, len(x))
			for _, e := range x {
				if n >= providerwire.MaxKeys {
					cuts[what+" keys over 256"]++
					continue
				}
				n++
				out = append(out, walk(e, depth+1))
			}
			return out
		case string:
			if len(x) > providerwire.MaxLen {
				cuts[what+" values over 4096 bytes"]++
				return attributes.Clean(x)
			}
			return x
		}
		return v
	}
	out, _ := walk(obj, 0).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out
}
