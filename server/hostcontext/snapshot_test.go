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
	b.WriteString(`]}, "context": {"big": {`)
	for i := range 300 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%03d": "v"`, i)
	}
	fmt.Fprintf(&b, `}, "long": {"v": "%s"}}}`, strings.Repeat("é", 3000))
	s, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Dynamic["docker"]) != MaxMappings || s.Truncated["dynamic.docker mappings over 1000"] != 200 {
		t.Fatalf("mappings %d, truncated %v", len(s.Dynamic["docker"]), s.Truncated)
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
