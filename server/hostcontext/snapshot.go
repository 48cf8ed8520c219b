package hostcontext

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/internal/configrender"
	"github.com/myriarch/myriarch/internal/providerwire"
)

// Bounds of one snapshot (providerwire's, enforced here).
const (
	MaxSnapshot   = providerwire.MaxBytes
	MaxMappings   = providerwire.MaxMappings
	MaxKeys       = providerwire.MaxKeys
	MaxProcessors = providerwire.MaxProcessors
)

// Snapshot is one updater's providers, flattened to variable names.
type Snapshot struct {
	// Seq is the updater's sequence number of the snapshot.
	Seq uint64 `json:"seq"`
	// Context maps variable names ("host.name") to values.
	Context map[string]string `json:"context"`
	// Dynamic holds each dynamic provider's mappings, sorted by id.
	Dynamic map[string][]configrender.Mapping `json:"dynamic"`
	// Truncated counts what the updater and the server cut, by what.
	Truncated map[string]int `json:"truncated,omitempty"`
}

var providerName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// Parse reads and bounds one snapshot. An error means nothing of it is
// used; cuts are counted in Truncated.
func Parse(data []byte) (*Snapshot, error) {
	if len(data) > MaxSnapshot {
		return nil, fmt.Errorf("snapshot of %d bytes is over the %d-byte limit", len(data), MaxSnapshot)
	}
	var w providerwire.Snapshot
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("malformed snapshot JSON: %w", err)
	}
	s := &Snapshot{Seq: w.Seq, Context: map[string]string{}, Dynamic: map[string][]configrender.Mapping{}, Truncated: map[string]int{}}
	for k, n := range w.Truncated {
		if n > 0 && len(s.Truncated) < 32 {
			s.Truncated["updater: "+attributes.Clean(k)] = n
		}
	}
	var bad []string
	for _, p := range slices.Sorted(maps.Keys(w.Context)) {
		if !providerName.MatchString(p) {
			bad = append(bad, fmt.Sprintf("context provider %q is not a provider name", attributes.Clean(p)))
			continue
		}
		s.flattenInto(s.Context, p, w.Context[p], "context."+p)
	}
	for _, p := range slices.Sorted(maps.Keys(w.Dynamic)) {
		if !providerName.MatchString(p) {
			bad = append(bad, fmt.Sprintf("dynamic provider %q is not a provider name", attributes.Clean(p)))
			continue
		}
		ms := w.Dynamic[p]
		if len(ms) > MaxMappings {
			s.Truncated["dynamic."+p+" mappings over "+strconv.Itoa(MaxMappings)] += len(ms) - MaxMappings
			ms = ms[:MaxMappings]
		}
		seen := map[string]bool{}
		out := make([]configrender.Mapping, 0, len(ms))
		for _, m := range ms {
			id := attributes.Clean(m.ID)
			switch {
			case id == "":
				s.Truncated["dynamic."+p+" mappings without an id"]++
				continue
			case seen[id]:
				s.Truncated["dynamic."+p+" mappings with a duplicate id"]++
				continue
			}
			seen[id] = true
			cm := configrender.Mapping{ID: id, Vars: map[string]string{}}
			s.flattenInto(cm.Vars, p, m.Mapping, "dynamic."+p)
			procs, err := processors(m.Processors)
			if err != nil {
				s.Truncated["dynamic."+p+" mappings with bad processors"]++
				continue
			}
			cm.Processors = procs
			out = append(out, cm)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
		s.Dynamic[p] = out
	}
	if len(bad) > 0 {
		return nil, errors.New(joinUpTo(bad, 5))
	}
	if len(s.Truncated) == 0 {
		s.Truncated = nil
	}
	return s, nil
}

// flattenInto adds provider p's object v to out as "p.key.sub" strings:
// lists and maps also as JSON under their own name, list items under
// their index. At most MaxKeys per object; keys and values are cleaned
// and cut like attributes.
func (s *Snapshot) flattenInto(out map[string]string, p string, v map[string]any, what string) {
	n := 0
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if n >= MaxKeys {
			s.Truncated[what+" keys over "+strconv.Itoa(MaxKeys)]++
			return
		}
		if len(prefix) > attributes.MaxLen {
			s.Truncated[what+" keys over 4096 bytes"]++
			return
		}
		switch x := v.(type) {
		case map[string]any:
			if prefix != p {
				out[prefix] = cut(s, what, jsonText(x))
				n++
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(prefix+"."+attributes.Clean(k), x[k])
			}
		case []any:
			out[prefix] = cut(s, what, jsonText(x))
			n++
			for i, e := range x {
				walk(prefix+"."+strconv.Itoa(i), e)
			}
		case nil:
			out[prefix] = ""
			n++
		case string:
			out[prefix] = cut(s, what, x)
			n++
		default:
			out[prefix] = cut(s, what, jsonText(x))
			n++
		}
	}
	walk(p, map[string]any(v))
}

func cut(s *Snapshot, what, v string) string {
	c := attributes.Clean(v)
	if len(c) < len(v) && len(v) > attributes.MaxLen {
		s.Truncated[what+" values over 4096 bytes"]++
	}
	return c
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// processors reads a mapping's processors: a list of single-key objects,
// or one object whose keys are processor types.
func processors(v any) ([]any, error) {
	var list []any
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []any:
		list = x
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			list = append(list, map[string]any{k: x[k]})
		}
	default:
		return nil, errors.New("processors are a list or an object")
	}
	if len(list) > MaxProcessors {
		return nil, fmt.Errorf("%d processors, at most %d", len(list), MaxProcessors)
	}
	for _, e := range list {
		if m, ok := e.(map[string]any); !ok || len(m) != 1 {
			return nil, errors.New("a processor is an object with one key, its type")
		}
	}
	return list, nil
}

func joinUpTo(list []string, n int) string {
	out := ""
	for i, s := range list {
		if i == n {
			return out + fmt.Sprintf("; and %d more", len(list)-n)
		}
		if i > 0 {
			out += "; "
		}
		out += s
	}
	return out
}

// Equal reports whether two snapshots render alike: everything but Seq
// and Truncated.
func (s *Snapshot) Equal(o *Snapshot) bool {
	if s == nil || o == nil {
		return s == o
	}
	a, _ := json.Marshal(Snapshot{Context: s.Context, Dynamic: s.Dynamic})
	b, _ := json.Marshal(Snapshot{Context: o.Context, Dynamic: o.Dynamic})
	return string(a) == string(b)
}
