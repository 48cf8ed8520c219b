package hostcontext

import (
	"fmt"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	s, err := Parse([]byte(`{"seq": 3, "context": {"host": {"name": "h", "ip": ["10.0.0.1", "::1"], "n": 2, "nested": {"a": true}, "nil": null}},
		"dynamic": {"docker": [{"id": "b", "mapping": {"container": {"name": "x"}}, "processors": {"add_fields": {"target": "c", "fields": {"a": 1}}}},
		                       {"id": "a", "mapping": {"paths": {"log": "/l"}}}, {"id": "a", "mapping": {}}, {"mapping": {}}]},
		"truncated": {"env variables not allowed": 4}}`))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"host.name": "h", "host.ip": `["10.0.0.1","::1"]`, "host.ip.1": "::1", "host.n": "2",
		"host.nested": `{"a":true}`, "host.nested.a": "true", "host.nil": ""} {
		if got, ok := s.Context[k]; !ok || got != want {
			t.Errorf("%s = %q (%v), want %q", k, got, ok, want)
		}
	}
	ms := s.Dynamic["docker"]
	if len(ms) != 2 || ms[0].ID != "a" || ms[1].Vars["docker.container.name"] != "x" || ms[0].Vars["docker.paths.log"] != "/l" || len(ms[1].Processors) != 1 {
		t.Fatalf("mappings %+v", ms)
	}
	if s.Truncated["dynamic.docker mappings with a duplicate id"] != 1 || s.Truncated["dynamic.docker mappings without an id"] != 1 ||
		s.Truncated["updater: env variables not allowed"] != 4 {
		t.Fatalf("truncated %v", s.Truncated)
	}
}

func TestParseBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"dynamic": {"docker": [`)
	for i := range 100000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id": "%d"}`, i)
	}
	b.WriteString(`]}}`)
	if _, err := Parse([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "over the 1048576-byte limit") {
		t.Fatalf("100 000 mappings in %d bytes: %v", b.Len(), err)
	}
	b.Reset()
	b.WriteString(`{"dynamic": {"docker": [`)
	for i := range 1200 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id": "%d"}`, i)
	}
	b.WriteString(`]}}`)
	s, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Dynamic["docker"]) != MaxMappings || s.Truncated["dynamic.docker mappings over 1000"] != 200 {
		t.Fatalf("mappings %d, truncated %v", len(s.Dynamic["docker"]), s.Truncated)
	}
	b.Reset()
	b.WriteString(`{"context": {"big": {`)
	for i := range 300 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%03d": "v"`, i)
	}
	fmt.Fprintf(&b, `}, "long": {"v": "%s"}}}`, strings.Repeat("é", 3000))
	s, err = Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Truncated["context.big keys over 256"]; n != 44 {
		t.Fatalf("keys cut %d: %v", n, s.Truncated)
	}
	if v := s.Context["long.v"]; len(v) > 4096 || s.Truncated["context.long values over 4096 bytes"] != 1 {
		t.Fatalf("long value %d bytes, %v", len(v), s.Truncated)
	}
	for in, want := range map[string]string{
		`{"context": `:                      "malformed",
		`{"context": {"Bad": {}}}`:          "not a provider name",
		`{"dynamic": {"a-b": []}}`:          "not a provider name",
		`{"context": {"host": "a string"}}`: "malformed",
	} {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

func TestEqualIgnoresSeqAndCuts(t *testing.T) {
	a, _ := Parse([]byte(`{"seq": 1, "context": {"host": {"name": "h"}}}`))
	b, _ := Parse([]byte(`{"seq": 9, "context": {"host": {"name": "h"}}, "truncated": {"x": 1}}`))
	c, _ := Parse([]byte(`{"seq": 9, "context": {"host": {"name": "i"}}}`))
	if !a.Equal(b) || a.Equal(c) {
		t.Fatal("Equal")
	}
}

// TestParseRefusesHostileShapes: what a hostile updater sends is refused
// before it is decoded (depth, values) or once decoded (provider names and
// counts), with the reason; nothing of it is kept.
func TestParseRefusesHostileShapes(t *testing.T) {
	deep := `{"context": {"host": ` + strings.Repeat(`{"a": `, 20) + `1` + strings.Repeat(`}`, 20) + `}}`
	var wide strings.Builder
	wide.WriteString(`{"dynamic": {"docker": [{"id": "a", "processors": [{"add_fields": {"fields": {"x": [`)
	for i := range 70000 {
		if i > 0 {
			wide.WriteByte(',')
		}
		wide.WriteString(`{}`)
	}
	wide.WriteString(`]}}}]}]}}`)
	var many strings.Builder
	many.WriteString(`{"context": {`)
	for i := range MaxContextProviders + 1 {
		if i > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `"p%d": {"k": "v"}`, i)
	}
	many.WriteString(`}}`)
	for _, tc := range []struct{ name, in, want string }{
		{"deep", deep, "nested more than 16 deep"},
		{"wide", wide.String(), "more than 65536 JSON values"},
		{"too many context providers", many.String(), "17 context providers, at most 16"},
		{"labels as a context provider", `{"context": {"labels": {"tier": "gold"}}}`, `"labels" is reserved`},
		{"labels as a dynamic provider", `{"dynamic": {"labels": [{"id": "1", "mapping": {"tier": "gold"}}]}}`, `"labels" is reserved`},
		{"a string posing as a key", `{"context": {"host": {"a\"{[{[": "}}}]]]"}}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.in))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v (%+v), want an error with %q", err, s, tc.want)
			}
		})
	}
}

// TestParseProcessors: a mapping may carry add_fields only, within its
// bounds; a mapping with anything else is dropped and counted.
func TestParseProcessors(t *testing.T) {
	deepFields := `{"a": ` + strings.Repeat(`{"a": `, 4) + `1` + strings.Repeat(`}`, 5)
	s, err := Parse([]byte(`{"dynamic": {"docker": [
		{"id": "ok", "mapping": {"n": "1"}, "processors": [{"add_fields": {"target": "container", "fields": {"name": "x", "image": {"name": "y"}}}}]},
		{"id": "listener", "mapping": {"n": "2"}, "processors": [{"remotetap": {"endpoint": "0.0.0.0:12001"}}]},
		{"id": "extra-key", "mapping": {"n": "3"}, "processors": [{"add_fields": {"fields": {}, "exporters": {}}}]},
		{"id": "deep", "mapping": {"n": "4"}, "processors": [{"add_fields": {"fields": ` + deepFields + `}}]},
		{"id": "two-types", "mapping": {"n": "5"}, "processors": [{"add_fields": {"fields": {}}, "batch": {}}]}
	]}}`))
	if err != nil {
		t.Fatal(err)
	}
	ms := s.Dynamic["docker"]
	if len(ms) != 1 || ms[0].ID != "ok" || len(ms[0].Processors) != 1 {
		t.Fatalf("mappings %+v", ms)
	}
	cut := 0
	for k, n := range s.Truncated {
		if strings.HasPrefix(k, "dynamic.docker mappings with refused processors") {
			cut += n
		}
	}
	if cut != 4 {
		t.Fatalf("refused %d mappings, want 4: %v", cut, s.Truncated)
	}
	for _, want := range []string{`type "remotetap" is not supported`, `unknown key "exporters"`, "nested more than 4 deep", "one key"} {
		found := false
		for k := range s.Truncated {
			found = found || strings.Contains(k, want)
		}
		if !found {
			t.Errorf("no cut says %q: %v", want, s.Truncated)
		}
	}
}

// TestParseKeepsAtMostMaxStored: a snapshot within the wire's bounds keeps
// at most MaxStored bytes of variables, whole mappings at a time, and says
// what it cut.
func TestParseKeepsAtMostMaxStored(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"context": {"host": {"name": "h"}}, "dynamic": {"docker": [`)
	for i := range 900 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id": "%04d", "mapping": {"a": "%s", "b": "%s"}, "processors": [{"add_fields": {"fields": {"x": "%s"}}}]}`,
			i, strings.Repeat("a", 300), strings.Repeat("b", 300), strings.Repeat("x", 300))
	}
	b.WriteString(`]}}`)
	if b.Len() > MaxSnapshot {
		t.Fatalf("test snapshot of %d bytes is over the wire's bound", b.Len())
	}
	s, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got := storedBytes(s); got > MaxStored {
		t.Fatalf("kept %d bytes, over %d", got, MaxStored)
	}
	ms := s.Dynamic["docker"]
	if len(ms) == 0 || ms[0].ID != "0000" || s.Context["host.name"] != "h" {
		t.Fatalf("kept %d mappings from %q, host %q", len(ms), ms[0].ID, s.Context["host.name"])
	}
	for _, m := range ms {
		if len(m.Vars) != 2 || len(m.Processors) != 1 {
			t.Fatalf("mapping %s kept in part: %v", m.ID, m.Vars)
		}
	}
	if n := s.Truncated["dynamic.docker mappings over the 64 KiB kept per updater"]; n != 900-len(ms) {
		t.Fatalf("cut %d mappings, kept %d: %v", n, len(ms), s.Truncated)
	}
}

func TestEncodedLen(t *testing.T) {
	for _, v := range []string{"", "plain", `q"b\`, "\n\r\t", "\x01\x1f", "<&>", "\u2028x\u2029", "é€"} {
		if got, want := encodedLen(v), len(jsonText(v)); got < want {
			t.Errorf("encodedLen(%q) = %d, its JSON takes %d", v, got, want)
		}
	}
}

// storedBytes adds up what MaxStored bounds in s.
func storedBytes(s *Snapshot) int {
	n := 0
	for k, v := range s.Context {
		n += encodedLen(k) + encodedLen(v) + entryOverhead
	}
	for _, ms := range s.Dynamic {
		for _, m := range ms {
			n += encodedLen(m.ID) + entryOverhead
			if len(m.Processors) > 0 {
				n += len(jsonText(m.Processors))
			}
			for k, v := range m.Vars {
				n += encodedLen(k) + encodedLen(v) + entryOverhead
			}
		}
	}
	return n
}
