package hostcontext

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/internal/configrender"
	"github.com/myriarch/myriarch/internal/providerwire"
)

// Bounds of one snapshot (providerwire's, enforced here).
const (
	MaxSnapshot         = providerwire.MaxBytes
	MaxMappings         = providerwire.MaxMappings
	MaxKeys             = providerwire.MaxKeys
	MaxProcessors       = providerwire.MaxProcessors
	MaxContextProviders = providerwire.MaxContextProviders
	MaxDynamicProviders = providerwire.MaxDynamicProviders
	MaxStored           = providerwire.MaxStored
)

// ReservedProvider is the namespace of the server's labels: no provider
// may publish under it, so provider data never sets ${labels.…}.
const ReservedProvider = "labels"

// Snapshot is one updater's providers, flattened to variable names.
type Snapshot struct {
	// Seq is the updater's sequence number of the snapshot.
	Seq uint64 `json:"seq"`
	// Context maps variable names ("host.name") to values.
	Context map[string]string `json:"context"`
	// Types names the context's variables that are numbers or booleans
	// (configrender.Input.Types); the others are strings.
	Types map[string]string `json:"types,omitempty"`
	// Dynamic holds each dynamic provider's mappings, sorted by id.
	Dynamic map[string][]configrender.Mapping `json:"dynamic"`
	// Truncated counts what the updater and the server cut, by what.
	Truncated map[string]int `json:"truncated,omitempty"`

	// left is what of MaxStored the snapshot may still take while it is
	// parsed.
	left int
}

var providerName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// Parse reads and bounds one snapshot. An error means nothing of it is
// used; cuts are counted in Truncated. The raw bytes' size and JSON shape
// are checked before anything is decoded, and at most MaxStored bytes of
// variables, ids and processors are kept.
func Parse(data []byte) (*Snapshot, error) {
	if len(data) > MaxSnapshot {
		return nil, fmt.Errorf("snapshot of %d bytes is over the %d-byte limit", len(data), MaxSnapshot)
	}
	if err := providerwire.CheckShape(data); err != nil {
		return nil, fmt.Errorf("snapshot refused before decoding: %w", err)
	}
	var w providerwire.Snapshot
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("malformed snapshot JSON: %w", err)
	}
	s := &Snapshot{Seq: w.Seq, Context: map[string]string{}, Types: map[string]string{}, Dynamic: map[string][]configrender.Mapping{},
		Truncated: map[string]int{}, left: MaxStored}
	for k, n := range w.Truncated {
		if n > 0 && len(s.Truncated) < 32 {
			s.Truncated["updater: "+attributes.Clean(k)] = n
		}
	}
	var bad []string
	if n := len(w.Context); n > MaxContextProviders {
		bad = append(bad, fmt.Sprintf("%d context providers, at most %d", n, MaxContextProviders))
	}
	if n := len(w.Dynamic); n > MaxDynamicProviders {
		bad = append(bad, fmt.Sprintf("%d dynamic providers, at most %d", n, MaxDynamicProviders))
	}
	if len(bad) > 0 {
		return nil, errors.New(joinUpTo(bad, 5))
	}
	for _, p := range slices.Sorted(maps.Keys(w.Context)) {
		if err := checkProviderName(p); err != nil {
			bad = append(bad, "context provider "+err.Error())
			continue
		}
		s.flattenInto(s.Context, s.Types, p, w.Context[p], "context."+p, false)
	}
	for _, p := range slices.Sorted(maps.Keys(w.Dynamic)) {
		if err := checkProviderName(p); err != nil {
			bad = append(bad, "dynamic provider "+err.Error())
			continue
		}
		s.Dynamic[p] = s.mappings(p, w.Dynamic[p])
	}
	if len(bad) > 0 {
		return nil, errors.New(joinUpTo(bad, 5))
	}
	if len(s.Truncated) == 0 {
		s.Truncated = nil
	}
	if len(s.Types) == 0 {
		s.Types = nil
	}
	return s, nil
}

func checkProviderName(p string) error {
	switch {
	case !providerName.MatchString(p):
		return fmt.Errorf("%q is not a provider name", attributes.Clean(p))
	case p == ReservedProvider:
		return fmt.Errorf("%q is reserved: ${labels.…} are the server's labels, never provider data", p)
	}
	return nil
}

// mappings reads provider p's mappings, sorted by id: within MaxMappings,
// with ids, without duplicates, with valid processors, and whole while they
// fit in what is left of MaxStored.
func (s *Snapshot) mappings(p string, ms []providerwire.Mapping) []configrender.Mapping {
	if len(ms) > MaxMappings {
		s.Truncated["dynamic."+p+" mappings over "+strconv.Itoa(MaxMappings)] += len(ms) - MaxMappings
		ms = ms[:MaxMappings]
	}
	slices.SortStableFunc(ms, func(a, b providerwire.Mapping) int { return strings.Compare(a.ID, b.ID) })
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
		procs, size, err := processors(m.Processors)
		if err != nil {
			s.Truncated["dynamic."+p+" mappings with refused processors ("+err.Error()+")"]++
			continue
		}
		cm := configrender.Mapping{ID: id, Vars: map[string]string{}, Types: map[string]string{}, Processors: procs}
		before := s.left
		s.left -= encodedLen(id) + size + entryOverhead
		s.flattenInto(cm.Vars, cm.Types, p, m.Mapping, "dynamic."+p, true)
		if s.left < 0 {
			// A mapping is kept whole or not at all.
			s.left = before
			s.Truncated["dynamic."+p+" mappings over the "+storedLimit+" kept per updater"]++
			continue
		}
		if len(cm.Types) == 0 {
			cm.Types = nil
		}
		out = append(out, cm)
	}
	slices.SortFunc(out, func(a, b configrender.Mapping) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// entryOverhead is what MaxStored counts for each variable and mapping
// beyond its bytes: its share of the map holding it and of its strings'
// headers, so a snapshot of many tiny variables costs what it takes.
const entryOverhead = 48

// storedLimit names MaxStored in what a cut is counted under.
var storedLimit = strconv.Itoa(MaxStored>>10) + " KiB"

// flattenInto adds provider p's object v to out as "p.key.sub" strings:
// lists and maps also as JSON under their own name, list items under
// their index. At most MaxKeys per object; keys and values are cleaned
// and cut like attributes. Each takes its bytes from what is left of
// MaxStored; once that is spent nothing more is added, counted per
// variable unless whole (the caller drops the object whole).
func (s *Snapshot) flattenInto(out, types map[string]string, p string, v map[string]any, what string, whole bool) {
	n := 0
	put := func(k, v, typ string) {
		v = cut(s, what, v)
		size := encodedLen(k) + encodedLen(v) + entryOverhead
		if typ != "" {
			size += encodedLen(k) + len(typ) + 4
		}
		if s.left < size {
			s.left = -1 // nothing more fits
			if !whole {
				s.Truncated[what+" variables over the "+storedLimit+" kept per updater"]++
			}
			return
		}
		s.left -= size
		out[k] = v
		if typ != "" {
			types[k] = typ
		}
		n++
	}
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
				put(prefix, jsonText(x), "")
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(prefix+"."+attributes.Clean(k), x[k])
			}
		case []any:
			put(prefix, jsonText(x), "")
			for i, e := range x {
				walk(prefix+"."+strconv.Itoa(i), e)
			}
		case nil:
			put(prefix, "", "")
		case string:
			put(prefix, x, "")
		case bool:
			put(prefix, jsonText(x), configrender.TypeBool)
		case float64, json.Number:
			put(prefix, jsonText(x), configrender.TypeNumber)
		default:
			put(prefix, jsonText(x), "")
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

// jsonText is v's JSON, as stored: without HTML escapes, so a value takes
// the bytes encodedLen counts.
func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // decoded JSON values: cannot fail
	return strings.TrimSuffix(b.String(), "\n")
}

// encodedLen is the length of s as a JSON string, what it takes of
// MaxStored: a value of control characters costs what storing it costs.
func encodedLen(s string) int {
	n := 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20:
			n += 6
		case c == 0xe2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xa8 || s[i+2] == 0xa9): // U+2028, U+2029
			n += 6
			i += 2
		default:
			n++
		}
	}
	return n
}

// Encode is s as stored with the updater's record.
func (s *Snapshot) Encode() []byte {
	return []byte(jsonText(s))
}

// processors reads a mapping's processors — a list of single-key objects,
// or one object whose keys are processor types — and the bytes their
// configuration takes. Only add_fields is accepted, as
// {"target": string, "fields": object}.
func processors(v any) ([]any, int, error) {
	var list []any
	switch x := v.(type) {
	case nil:
		return nil, 0, nil
	case []any:
		list = x
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			list = append(list, map[string]any{k: x[k]})
		}
	default:
		return nil, 0, errors.New("not a list or an object")
	}
	if len(list) > MaxProcessors {
		return nil, 0, fmt.Errorf("over %d", MaxProcessors)
	}
	for _, e := range list {
		if err := providerwire.CheckProcessor(e); err != nil {
			return nil, 0, err
		}
	}
	if len(list) == 0 {
		return nil, 0, nil
	}
	return list, len(jsonText(list)), nil
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
	a, _ := json.Marshal(Snapshot{Context: s.Context, Types: s.Types, Dynamic: s.Dynamic})
	b, _ := json.Marshal(Snapshot{Context: o.Context, Types: o.Types, Dynamic: o.Dynamic})
	return string(a) == string(b)
}
