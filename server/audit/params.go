package audit

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// QueryParams are the parameters of GET /api/v1/audit.
var QueryParams = []string{"actor", "action", "target", "outcome", "since", "until", "limit", "cursor"}

// ParseQuery reads GET /api/v1/audit's parameters: actor, action, target
// and outcome (exact matches; empty is no filter), since and until (RFC
// 3339 times), limit (1 to 1000) and cursor. Each is given at most once;
// an unknown parameter is refused, so that a misspelt filter never
// widens an answer. The error is a *ParamError naming the parameter.
func ParseQuery(v url.Values) (Query, error) {
	var q Query
	for _, name := range slices.Sorted(maps.Keys(v)) {
		if !slices.Contains(QueryParams, name) {
			return q, &ParamError{shown(name), "is not a parameter of the audit trail (" + strings.Join(QueryParams, ", ") + ")"}
		}
		if len(v[name]) > 1 {
			return q, &ParamError{name, fmt.Sprintf("must be given once, got %d values", len(v[name]))}
		}
	}
	q.Actor, q.Action, q.Target, q.Outcome, q.Cursor = v.Get("actor"), v.Get("action"), v.Get("target"), v.Get("outcome"), v.Get("cursor")
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		s := v.Get(p.name)
		if s == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || t.Year() < 1970 || t.Year() > 2261 {
			return q, &ParamError{p.name, "must be an RFC 3339 time from 1970 to 2261 such as 2025-06-01T12:00:00Z, got " + shown(s)}
		}
		*p.t = t
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			return q, &ParamError{"limit", fmt.Sprintf("must be an integer from 1 to %d, got %s", MaxLimit, shown(s))}
		}
		q.Limit = n
	}
	return q, nil
}
