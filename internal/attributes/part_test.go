package attributes

import (
	"maps"
	"slices"
	"testing"
)

// sharing counts the lists it was asked to share and hands back the first
// equal one.
type sharing struct{ kept []*[]string }

func (s *sharing) Share(keys []string) *[]string {
	for _, k := range s.kept {
		if slices.Equal(*k, keys) {
			return k
		}
	}
	s.kept = append(s.kept, &keys)
	return &keys
}

// The lists read back from a description are the lists it was built of,
// whatever they share with each other and with the labels.
func TestDescribedReadsBackBothLists(t *testing.T) {
	for _, tc := range []struct {
		name            string
		id, non, labels map[string]string
	}{
		{"none", nil, nil, nil},
		{"labels only", nil, nil, map[string]string{"wave": "1"}},
		{"a collector", map[string]string{"service.name": "otelcol", "service.version": "0.149.0", "service.instance.id": "u1"},
			map[string]string{"host.name": "h1", "os.type": "linux", "site.type": "edge"}, map[string]string{"wave": "1", "site": "007"}},
		{"a key in both lists", map[string]string{"service.name": "otelcol", "host.name": "id-host"},
			map[string]string{"host.name": "non-host", "os.type": "linux"}, map[string]string{"host.name": "label-host"}},
		{"identifying only", map[string]string{"service.name": "x"}, nil, nil},
		{"non-identifying only", nil, map[string]string{"os.type": "linux"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Describe(tc.id, tc.non, tc.labels, nil)
			check := func(d Described) {
				t.Helper()
				for _, c := range []struct {
					what string
					part Part
					want map[string]string
				}{{"identifying", d.Identifying(), tc.id}, {"non-identifying", d.NonIdentifying(), tc.non}} {
					want := c.want
					if want == nil {
						want = map[string]string{}
					}
					if got := c.part.Map(); !maps.Equal(got, want) {
						t.Errorf("%s: %v, want %v", c.what, got, want)
					}
					appended := map[string]string{}
					for _, kv := range c.part.AppendTo(nil) {
						appended[kv.Key] = kv.Value
					}
					if !maps.Equal(appended, want) {
						t.Errorf("%s: AppendTo %v, want %v", c.what, appended, want)
					}
					for k, v := range want {
						if got, ok := c.part.Get(k); !ok || got != v {
							t.Errorf("%s: Get(%q) = %q %v, want %q", c.what, k, got, ok, v)
						}
					}
					for k := range d.View.All() {
						if _, in := want[k]; !in {
							if v, ok := c.part.Get(k); ok {
								t.Errorf("%s: Get(%q) = %q, not in the list", c.what, k, v)
							}
						}
					}
				}
			}
			check(d)
			if want := NewView(tc.id, tc.non, tc.labels, nil); !d.View.Equal(want) {
				t.Errorf("view %v, want %v", d.View, want)
			}
			// Relabelled: the same lists, the new labels in a new view.
			newLabels := map[string]string{"wave": "2"}
			r := d.Relabel(newLabels, nil)
			check(r)
			if want := NewView(tc.id, tc.non, newLabels, nil); !r.View.Equal(want) {
				t.Errorf("relabelled view %v, want %v", r.View, want)
			}
			if len(tc.labels) > 0 && d.View.Equal(r.View) {
				t.Error("Relabel changed nothing")
			}
		})
	}
	var zero Part
	if _, ok := zero.Get("service.name"); ok || len(zero.AppendTo(nil)) != 0 || zero.Map() == nil || len(zero.Map()) != 0 {
		t.Error("the zero Part is not empty")
	}
}

// Descriptions with the same identifying keys keep one key list.
func TestDescribedShareKeyLists(t *testing.T) {
	s := &sharing{}
	a := Describe(map[string]string{"service.name": "a", "service.instance.id": "1"}, nil, nil, s)
	b := Describe(map[string]string{"service.instance.id": "2", "service.name": "b"}, nil, nil, s)
	if a.ident != b.ident || len(s.kept) != 1 {
		t.Fatalf("equal key lists not shared: %d kept", len(s.kept))
	}
	if a.Identifying().Value("service.name") != "a" || b.Identifying().Value("service.name") != "b" {
		t.Fatal("shared keys mixed up the values")
	}
}
