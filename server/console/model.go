package console

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/tokens"
)

// The admin API's JSON, decoded into the API's own types. An agent's
// feature fields (pairing, assignment, offer) are decoded as generic
// objects and read member by member: a member the console does not know is
// still shown, one a server does not have is simply absent.

// agentDoc is an agent as GET /api/v1/agents[/{uid}] gives it.
type agentDoc = admin.Agent

type listDoc struct {
	Agents []agentDoc `json:"agents"`
	Total  int        `json:"total"`
}

// estateDoc is GET /api/v1/estate.
type estateDoc struct {
	Revision *string          `json:"revision"`
	LoadedAt *time.Time       `json:"loadedAt"`
	Errors   []estate.Problem `json:"errors"`
	Findings []struct {
		Kind, Blueprint, Message string
	} `json:"findings"`
}

// tokenDoc is a token of GET/POST /api/v1/tokens; Secret only in the
// answer to its creation.
type tokenDoc struct {
	tokens.Token
	Secret string `json:"token"`
}

// field is one labelled value of a generic object.
type field struct {
	Key   string
	Label string
	Value string
	Null  bool
	Mono  bool // hashes, UIDs
}

// asMap is a decoded JSON object as a map (nil for anything else); a Go
// value is converted through its JSON form.
func asMap(v any) map[string]any {
	switch m := v.(type) {
	case map[string]any:
		return m
	case nil:
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// str reads a string member of an object ("" and false when absent, null
// or not a string).
func str(v any, key string) (string, bool) {
	s, ok := asMap(v)[key].(string)
	return s, ok
}

// obj reads an object member.
func obj(v any, key string) map[string]any {
	o, _ := asMap(v)[key].(map[string]any)
	return o
}

// scalar renders a JSON value for display; objects and arrays as compact JSON.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, false
	case bool:
		return strconv.FormatBool(x), false
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), false
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x), false
		}
		return string(b), false
	}
}

// fields lists the members of m: those in order first with their labels,
// then every other member in key order. Members whose key is in mono are
// shown in a fixed-width font.
func fields(m map[string]any, order [][2]string, mono map[string]bool) []field {
	var out []field
	seen := map[string]bool{}
	for _, kl := range order {
		v, ok := m[kl[0]]
		if !ok {
			continue
		}
		seen[kl[0]] = true
		s, null := scalar(v)
		out = append(out, field{Key: kl[0], Label: kl[1], Value: s, Null: null, Mono: mono[kl[0]]})
	}
	var rest []string
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		s, null := scalar(m[k])
		out = append(out, field{Key: k, Label: k, Value: s, Null: null, Mono: mono[k]})
	}
	return out
}
