package configs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"
)

// The effective configuration a collector v0.149 reports (its opamp
// extension marshals what it runs): block style, four-space indentation,
// lists of ids as block sequences.
const collectorEffective = `exporters:
    debug/out:
        verbosity: basic
    otlphttp:
        endpoint: "http://127.0.0.1:4318"
        headers:
            x-note: |
                receivers:
                  fake/in-a-block: {}
extensions:
    health_check:
        endpoint: localhost:13133
    opamp:
        server:
            ws:
                endpoint: ws://127.0.0.1:4320/v1/opamp
processors:
    batch: null
    "resource/files-c1":
        attributes:
            - action: upsert
              key: container.name
              value: "a: b"
receivers:
    filelog/files-c1:
        include:
            - /var/lib/docker/containers/c1/c1-json.log
    otlp:
        protocols:
            grpc: null
service:
    extensions:
        - health_check
        - opamp
    pipelines:
        logs:
            exporters:
                - debug/out
            processors:
                - batch
            receivers:
                - otlp
        logs/files-c1:
            receivers: [filelog/files-c1]
            processors: [resource/files-c1, batch]
            exporters: [debug/out]
    telemetry:
        logs:
            level: info
`

func TestScanDefinedIDs(t *testing.T) {
	want := []string{"exporters/debug/out", "exporters/otlphttp", "extensions/health_check", "extensions/opamp",
		"pipelines/logs", "pipelines/logs/files-c1", "processors/batch", "processors/resource/files-c1",
		"receivers/filelog/files-c1", "receivers/otlp"}
	ids, ok := scanDefinedIDs([]byte(collectorEffective))
	if !ok || !slices.Equal(ids, want) {
		t.Fatalf("scanned %v (%v)\nwant %v", ids, ok, want)
	}
	if parsed, ok := parseDefinedIDs([]byte(collectorEffective)); !ok || !slices.Equal(parsed, want) {
		t.Fatalf("parsed %v", parsed)
	}
	for _, tc := range []struct {
		name, doc string
		ok        bool
		ids       []string
	}{
		{"two-space and comments", "# c\nreceivers: # r\n  otlp: {} # x\n\n  'a''b': {}\nservice:\n  pipelines:\n    traces: {}\n", true,
			[]string{"pipelines/traces", "receivers/a'b", "receivers/otlp"}},
		{"empty sections", "receivers: {}\nprocessors: null\nexporters:\nservice: {}\n", true, nil},
		{"document start", "---\nreceivers:\n  otlp:\n", true, []string{"receivers/otlp"}},
		{"flow section", "receivers: {otlp: {}}\n", false, nil},
		{"flow pipelines", "service:\n  pipelines: {logs: {}}\n", false, nil},
		{"block scalar section", "receivers: |\n  otlp: {}\n", false, nil},
		{"anchor", "receivers:\n  otlp: &a {}\n  other: *a\n", false, nil},
		{"two documents", "receivers:\n  a: {}\n---\nreceivers:\n  b: {}\n", false, nil},
		{"tab", "receivers:\n\totlp: {}\n", false, nil},
		{"duplicate", "receivers:\n  a: {}\n  a: {}\n", false, nil},
		{"a sequence of receivers", "receivers:\n  - otlp\n", false, nil},
		{"a scalar where ids are", "receivers:\n  just text\n", false, nil},
		{"deep block scalars and continuations", "exporters:\n  x:\n    text: \"a\n      processors: b\"\n    more: >\n      receivers:\n        y: {}\n", true,
			[]string{"exporters/x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, ok := scanDefinedIDs([]byte(tc.doc))
			if ok != tc.ok || !slices.Equal(ids, tc.ids) {
				t.Fatalf("scanned %q (%v), want %q (%v)", ids, ok, tc.ids, tc.ok)
			}
			if !ok {
				return
			}
			if parsed, pok := parseDefinedIDs([]byte(tc.doc)); !pok || !slices.Equal(parsed, ids) {
				t.Fatalf("the YAML parser reads %q (%v)", parsed, pok)
			}
		})
	}
}

// Every rendered configuration of the render goldens reads the same with
// the scanner as with the YAML parser.
func TestScanDefinedIDsReadsRenderedConfigs(t *testing.T) {
	files, _ := filepath.Glob("../../internal/configrender/testdata/*.golden.yaml")
	if len(files) == 0 {
		t.Fatal("no rendered configurations to read")
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		scanned, ok := scanDefinedIDs(body)
		parsed, pok := parseDefinedIDs(body)
		if !ok || !pok || !slices.Equal(scanned, parsed) || len(scanned) == 0 {
			t.Errorf("%s: scanned %v (%v), parsed %v (%v)", f, scanned, ok, parsed, pok)
		}
	}
}

// What the scanner reads, the YAML parser reads alike.
func FuzzScanDefinedIDs(f *testing.F) {
	f.Add([]byte(collectorEffective))
	f.Add([]byte("receivers:\n  otlp: {}\nservice:\n  pipelines:\n    logs: {}\n"))
	f.Add([]byte("exporters:\n  x:\n    text: \"a\n      b\"\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		scanned, ok := scanDefinedIDs(doc)
		if !ok {
			return
		}
		if parsed, pok := parseDefinedIDs(doc); pok && !slices.Equal(scanned, parsed) {
			t.Fatalf("scanned %q, parsed %q\n%s", scanned, parsed, doc)
		}
	})
}

// A body is read once per hash, whoever reports it, and one over
// MaxEffective is not read at all.
func TestDefinedCache(t *testing.T) {
	c := newDefinedCache()
	a, ok := c.of("h1", []byte(collectorEffective))
	b, _ := c.of("h1", []byte("receivers:\n  other: {}\n"))
	if !ok || len(a) == 0 || &a[0] != &b[0] {
		t.Fatalf("read twice: %v %v", a, b)
	}
	for i := range maxDefinedCached + 10 {
		c.of(strings.Repeat("x", i+1), []byte("receivers:\n  a: {}\n"))
	}
	if len(c.byKey) != maxDefinedCached || len(c.order) != maxDefinedCached {
		t.Fatalf("cache holds %d", len(c.byKey))
	}
	e := &Engine{defined: newDefinedCache()}
	big := &effectiveTest{body: strings.Repeat("receivers:\n  a: {}\n", MaxEffective/19+1)}
	ef := e.readEffective(big.configMap())
	if ef.ok || ef.size <= MaxEffective || ef.hash == "" || len(e.defined.byKey) != 0 {
		t.Fatalf("a body over MaxEffective: %+v", ef)
	}
}

type effectiveTest struct{ body string }

func (e *effectiveTest) configMap() *protobufs.AgentConfigMap {
	return &protobufs.AgentConfigMap{ConfigMap: map[string]*protobufs.AgentConfigFile{"": {Body: []byte(e.body)}}}
}
