package blueprint

import (
	"bytes"
	"errors"
	"runtime"
	"slices"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// TestWriteFlowIDsRoundTrip: every id written into a pipeline list reads
// back as the same string, whatever a team or Component is called.
func TestWriteFlowIDsRoundTrip(t *testing.T) {
	ids := []string{"otlp/a.exp", "true", "no", "1e3", "0x1F", "debug/x,y", "a: b", "#x", "-", "otlp/ünïcode", `q"uote`, "null", "~", "otlp/team.name-2"}
	var b emitBuf
	b.WriteString("ids: ")
	writeFlowIDs(&b, ids)
	var got struct {
		IDs []string `yaml:"ids"`
	}
	if err := yaml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if !slices.Equal(got.IDs, ids) {
		t.Fatalf("read back %q, want %q\n%s", got.IDs, ids, b.String())
	}
}

// TestWriteConfigRoundTrip renders tricky authored config and reads it back.
func TestWriteConfigRoundTrip(t *testing.T) {
	src := `k:
  plain: value
  int: 42
  str_int: "42"
  float: 1.5
  bool: true
  str_bool: "true"
  null_value:
  tilde: ~
  env: ${env:HOME}
  url: https://gateway.internal:4318/v1?x=1#frag
  colon_space: "a: b"
  hash: "a #b"
  leading_dash: "- x"
  multi: |
    line one
    line two
  folded: >
    folded
    text
  quoted_key: {"a: b": 1, "": empty}
  list: [1, "1", [nested, list], {m: 1}, []]
  empty_map: {}
  tagged: !!str 7
  unicode: "tab\there \u2028 \u00e9"
  list_of_maps:
    - context: span
      statements:
        - delete_key(attributes, "user.email")
    - a: 1
`
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	budget := maxConfigNodes
	cfg, problem, _ := copyConfig(doc.Content[0].Content[1], &budget, 0)
	if problem != "" {
		t.Fatal(problem)
	}
	var b emitBuf
	writeKey(&b, 0, "k")
	writeValue(&b, cfg, 0)
	var want, got any
	if err := yaml.Unmarshal([]byte(src), &want); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("written config is not YAML: %v\n%s", err, b.String())
	}
	if !equalYAML(got, want) {
		t.Fatalf("round trip changed the config:\n--- written\n%s\n--- got %#v\n--- want %#v", b.String(), got, want)
	}
}

func equalYAML(a, b any) bool {
	ab, err1 := yaml.Marshal(a)
	bb, err2 := yaml.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ab, bb)
}

// TestYAMLWithinStopsAtItsBound: a plan whose document would be far over
// the bound (a value nested 3 000 deep: its indentation alone is about
// 9 MB) stops being written shortly after the bound, with an error; the
// same plan within a larger bound is written whole.
func TestYAMLWithinStopsAtItsBound(t *testing.T) {
	leaf := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "v"}
	deep := leaf
	for range 3000 {
		deep = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: "k"}, deep}}
	}
	p := &Plan{Components: []Placed{{ID: "resource/x", Class: ClassProcessor, Type: "resource", Config: deep}}}
	const bound = 256 << 10
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := p.YAMLWithin(bound)
	runtime.ReadMemStats(&after)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Max != bound || out != nil {
		t.Fatalf("got %d bytes, %v", len(out), err)
	}
	full := p.YAML()
	if len(full) < 8<<20 {
		t.Fatalf("the whole document is only %d bytes", len(full))
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(len(full))/4 {
		t.Fatalf("writing within %d bytes allocated %d, a quarter or more of the whole document's %d", bound, grew, len(full))
	}
	if whole, err := p.YAMLWithin(len(full)); err != nil || !bytes.Equal(whole, full) {
		t.Fatalf("within its own size: %d bytes, %v", len(whole), err)
	}
}
