package admin

import (
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/registry"
)

// maxFilterValue bounds a filter value: attribute keys and values are cut
// to 4 KiB, so a longer value can match nothing.
const maxFilterValue = 4096

// attrVersion is the attribute-view key the listing filters and sorts
// versions by (host names come from registry.Agent.Host).
const attrVersion = "service.version"

// builtinFilters are the registry-level filters of GET /api/v1/agents:
// online, version, attr (key=value on the attribute view; a label is
// labels.KEY) and q (free text in the host name or the instance UID).
func (a *API) builtinFilters() {
	a.AddFilter("online", func(v string) (func(*registry.Agent) bool, error) {
		switch v {
		case "true", "false":
			want := v == "true"
			return func(ag *registry.Agent) bool { return ag.Online == want }, nil
		}
		return nil, fmt.Errorf("online must be true or false, got %q", v)
	})
	a.AddFilter("version", boundedFilter("version", func(v string) (func(*registry.Agent) bool, error) {
		return func(ag *registry.Agent) bool { return ag.Attributes.Value(attrVersion) == v }, nil
	}))
	a.AddFilter("attr", boundedFilter("attr", func(v string) (func(*registry.Agent) bool, error) {
		key, val, ok := strings.Cut(v, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("attr must be KEY=VALUE on the attribute view (a label is labels.KEY=VALUE), got %q", v)
		}
		return func(ag *registry.Agent) bool {
			got, ok := ag.Attributes.Get(key)
			return ok && got == val
		}, nil
	}))
	a.AddFilter("q", boundedFilter("q", func(v string) (func(*registry.Agent) bool, error) {
		if v == "" {
			return func(*registry.Agent) bool { return true }, nil
		}
		lower := strings.ToLower(v)
		match := func(s string) bool { return containsFold(s, v) }
		if isASCII(v) {
			match = func(s string) bool { return containsLowerASCII(s, lower) }
		}
		return func(ag *registry.Agent) bool {
			if match(ag.Host) {
				return true
			}
			var b [36]byte // the UID's text is lower case
			return containsLowerASCII(string(encodeUID(&b, ag.UID)), lower)
		}, nil
	}))
}

// boundedFilter refuses values longer than any attribute can be.
func boundedFilter(param string, f FilterFunc) FilterFunc {
	return func(v string) (func(*registry.Agent) bool, error) {
		if len(v) > maxFilterValue {
			return nil, fmt.Errorf("%s must be at most %d bytes, got %d", param, maxFilterValue, len(v))
		}
		return f(v)
	}
}

// containsFold reports whether sub is in s, ignoring case (Unicode simple folding).
func containsFold(s, sub string) bool {
	if len(sub) == 0 {
		return true
	}
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// containsLowerASCII reports whether lower (ASCII, lower case) is in s,
// ignoring the case of s's ASCII letters; it allocates nothing.
func containsLowerASCII(s, lower string) bool {
	n := len(lower)
	if n == 0 {
		return true
	}
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lower[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

// encodeUID writes the canonical text form of u into b without allocating.
func encodeUID(b *[36]byte, u uuid.UUID) []byte {
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return b[:]
}

// HasFilter reports whether GET /api/v1/agents filters by param (features
// add theirs with AddFilter), so a client offers only filters that work.
func (a *API) HasFilter(param string) bool {
	_, ok := a.filters[param]
	return ok
}
