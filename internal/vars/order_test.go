package vars

import (
	"errors"
	"testing"
)

// TestRenderYAMLDocumentOrder: with several missing references (or parse
// errors) the one reported is the first written, not the first in sorted
// key order.
func TestRenderYAMLDocumentOrder(t *testing.T) {
	data := newTestData(t, docCtx, dockerDyn)
	src := []byte(`
inputs:
  - zeta: "${first.missing}"
    alpha: "${second.missing}"
    list:
      - "${third.missing}"
  - base: &b {z: "${anchored.missing}"}
    a: *b
`)
	res, err := Engine{}.RenderYAML("doc.yaml", src, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Dropped) != 2 || res.Dropped[0].Reference != "${first.missing}" || res.Dropped[1].Reference != "${anchored.missing}" {
		t.Fatalf("dropped %+v, want the first-written references", res.Dropped)
	}
	// RenderDocument on decoded values has no order: sorted keys.
	res, err = Engine{}.RenderDocument(map[string]any{"inputs": []any{map[string]any{"zeta": "${first.missing}", "alpha": "${second.missing}"}}}, data)
	if err != nil {
		t.Fatal(err)
	}
	if res.Dropped[0].Reference != "${second.missing}" {
		t.Fatalf("dropped %+v, want sorted-order reference", res.Dropped)
	}

	_, err = Engine{}.RenderYAML("doc.yaml", []byte("inputs:\n  - {z: '${a..b}', a: '${c@d}'}\n"), data)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Template != "${a..b}" {
		t.Fatalf("got %v, want the first-written parse error", err)
	}

	_, err = Engine{}.RenderYAML("doc.yaml", []byte("inputs: [\n"), data)
	if KindOf(err) != KindRender {
		t.Fatalf("bad YAML: %v", err)
	}
}

func TestYAMLKeyOrderMergeKeys(t *testing.T) {
	src := []byte("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  w: 3\n")
	o, err := YAMLKeyOrder(src)
	if err != nil {
		t.Fatal(err)
	}
	got := o.orderedKeys(keyPath("", "m"), map[string]any{"w": 1, "x": 1, "y": 1})
	if len(got) != 3 || got[0] != "w" || got[1] != "x" || got[2] != "y" {
		t.Fatalf("order %v: written keys first, merged keys after, sorted", got)
	}
}

func TestRenderYAMLKeepsTimestampsAsWritten(t *testing.T) {
	data := newTestData(t, docCtx, "")
	res, err := Engine{}.RenderYAML("doc.yaml", []byte("since: 2001-12-14\ninputs: [{at: 2001-12-14T21:59:43.10-05:00, n: 0x1F}]\n"), data)
	if err != nil {
		t.Fatal(err)
	}
	in := res.Document["inputs"].([]any)[0].(map[string]any)
	if res.Document["since"] != "2001-12-14" || in["at"] != "2001-12-14T21:59:43.10-05:00" || in["n"] != int64(31) {
		t.Fatalf("document %v", res.Document)
	}
}
