package vars

import (
	"fmt"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/internal/testenv"
)

// benchDocument is 100 inputs, each reading docker variables (whole-value,
// interpolated, with fallbacks) plus context variables.
func benchDocument() map[string]any {
	inputs := make([]any, 100)
	for i := range inputs {
		inputs[i] = map[string]any{
			"id":   fmt.Sprintf("logs-%d", i),
			"type": "filelog",
			"paths": []any{
				"${docker.paths.log}",
				fmt.Sprintf("/var/lib/docker/containers/${docker.container.id}/extra-%d.log", i),
			},
			"fields": map[string]any{
				"host":      "${host.name}",
				"container": "${docker.container.name}",
				"image":     "${docker.container.image.name|'unknown'}",
				"app":       "${docker.container.labels.app|'none'}",
				"index":     int64(i),
			},
			"processors": []any{map[string]any{"drop_fields": map[string]any{"fields": []any{"x"}}}},
		}
	}
	return map[string]any{
		"inputs":  inputs,
		"outputs": map[string]any{"default": map[string]any{"hosts": []any{"${host.name}:4317"}}},
	}
}

func benchData(b *testing.B, n int) *Data {
	ms := make([]Mapping, n)
	for i := range ms {
		id := fmt.Sprintf("%064x", i)
		ms[i] = Mapping{
			Provider: "docker",
			ID:       id,
			Vars: map[string]any{
				"container": map[string]any{
					"id": id, "name": fmt.Sprintf("svc-%d", i),
					"image":  map[string]any{"name": "example/app:1.0"},
					"labels": map[string]any{"app": fmt.Sprintf("app-%d", i%10), "com.example.tier": "web"},
				},
				"paths": map[string]any{"log": "/var/lib/docker/containers/" + id + "/" + id + "-json.log"},
			},
			Processors: []any{map[string]any{"add_fields": map[string]any{"target": "container", "fields": map[string]any{"id": id}}}},
		}
	}
	d, err := NewData(map[string]any{"host": map[string]any{"name": "bench-host"}}, ms)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkRenderDocument100x1000 renders 100 inputs against 1 000 docker
// mappings: 100 000 input renders, 100 000 kept copies.
func BenchmarkRenderDocument100x1000(b *testing.B) {
	doc := benchDocument()
	data := benchData(b, 1000)
	b.ReportAllocs()
	var kept int
	cpu0 := testenv.ProcessCPU()
	for b.Loop() {
		res, err := Engine{}.RenderDocument(doc, data)
		if err != nil {
			b.Fatal(err)
		}
		kept = len(res.Document["inputs"].([]any))
	}
	if kept != 100*1000 {
		b.Fatalf("kept %d inputs, want 100000", kept)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100000, "ns/input-render")
	b.ReportMetric(float64((testenv.ProcessCPU()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// BenchmarkNewData1000 is the one-off cost of preparing 1 000 mappings.
func BenchmarkNewData1000(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		benchData(b, 1000)
	}
}

// BenchmarkParse reports the parse cost per reference for a template of
// 100 references of assorted shapes.
func BenchmarkParse(b *testing.B) {
	shapes := []string{"${docker.paths.log}", "${ host.name }", "${a.b|c.d|'dflt'}", "${HOSTNAME}", `${"x|y"}`}
	var sb strings.Builder
	for i := 0; i < 100; i++ {
		sb.WriteString("text ")
		sb.WriteString(shapes[i%len(shapes)])
	}
	src := sb.String()
	b.ReportAllocs()
	cpu0 := testenv.ProcessCPU()
	for b.Loop() {
		if _, err := Parse(src); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/ref")
	b.ReportMetric(float64((testenv.ProcessCPU()-cpu0).Nanoseconds())/float64(b.N)/100, "cpu-ns/ref")
}

// BenchmarkParseSingle is one typical whole-value reference.
func BenchmarkParseSingle(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("${docker.container.labels.app|'none'}"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderInterpolated evaluates a parsed two-reference string.
func BenchmarkRenderInterpolated(b *testing.B) {
	data := benchData(b, 1)
	tm, err := Parse("/var/lib/docker/containers/${docker.container.id}/${docker.container.name}.log")
	if err != nil {
		b.Fatal(err)
	}
	set := data.MappingSet(0)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := tm.Render(set); err != nil {
			b.Fatal(err)
		}
	}
}
