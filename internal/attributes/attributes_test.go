package attributes

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/open-telemetry/opamp-go/protobufs"
)

func str(s string) *protobufs.AnyValue {
	return &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: s}}
}
func i64(v int64) *protobufs.AnyValue {
	return &protobufs.AnyValue{Value: &protobufs.AnyValue_IntValue{IntValue: v}}
}
func dbl(v float64) *protobufs.AnyValue {
	return &protobufs.AnyValue{Value: &protobufs.AnyValue_DoubleValue{DoubleValue: v}}
}
func boolean(v bool) *protobufs.AnyValue {
	return &protobufs.AnyValue{Value: &protobufs.AnyValue_BoolValue{BoolValue: v}}
}
func byts(v []byte) *protobufs.AnyValue {
	return &protobufs.AnyValue{Value: &protobufs.AnyValue_BytesValue{BytesValue: v}}
}
func arr(vs ...*protobufs.AnyValue) *protobufs.AnyValue {
	return &protobufs.AnyValue{Value: &protobufs.AnyValue_ArrayValue{ArrayValue: &protobufs.ArrayValue{Values: vs}}}
}
func kvl(kvs ...*protobufs.KeyValue) *protobufs.AnyValue {
	return &protobufs.AnyValue{Value: &protobufs.AnyValue_KvlistValue{KvlistValue: &protobufs.KeyValueList{Values: kvs}}}
}
func kv(k string, v *protobufs.AnyValue) *protobufs.KeyValue {
	return &protobufs.KeyValue{Key: k, Value: v}
}

func TestString(t *testing.T) {
	tests := []struct {
		name string
		in   *protobufs.AnyValue
		want string
	}{
		{"nil", nil, ""},
		{"empty oneof", &protobufs.AnyValue{}, ""},
		{"string", str("edge-001"), "edge-001"},
		{"empty string", str(""), ""},
		{"bool true", boolean(true), "true"},
		{"bool false", boolean(false), "false"},
		{"int", i64(42), "42"},
		{"negative int", i64(-7), "-7"},
		{"max int", i64(math.MaxInt64), "9223372036854775807"},
		{"double", dbl(0.75), "0.75"},
		{"double integral", dbl(2), "2"},
		{"double large", dbl(1e21), "1e+21"},
		{"double small", dbl(1e-7), "1e-07"},
		{"double NaN", dbl(math.NaN()), "NaN"},
		{"double +Inf", dbl(math.Inf(1)), "+Inf"},
		{"bytes", byts([]byte{0, 1, 2, 0xff}), "AAEC/w=="},
		{"empty bytes", byts(nil), ""},
		{"array", arr(str("a"), i64(1), boolean(true), dbl(1.5), byts([]byte("hi"))), `["a",1,true,1.5,"aGk="]`},
		{"empty array", arr(), `[]`},
		{"array with empty value", arr(&protobufs.AnyValue{}), `[null]`},
		{"kvlist", kvl(kv("b", i64(2)), kv("a", str("x"))), `{"a":"x","b":2}`},
		{"kvlist later duplicate wins", kvl(kv("a", i64(1)), kv("a", i64(2))), `{"a":2}`},
		{"nested", kvl(kv("l", arr(kvl(kv("k", str("<&>")))))), `{"l":[{"k":"<&>"}]}`},
		{"nested NaN", arr(dbl(math.NaN())), `["NaN"]`},
		{"empty kvlist", kvl(), `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := String(tt.in); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestClean(t *testing.T) {
	long := strings.Repeat("a", MaxLen+10)
	// 4095 ASCII bytes followed by a 3-byte rune: the rune must not be split.
	boundary := strings.Repeat("a", MaxLen-1) + "€"
	tests := []struct {
		name, in, want string
	}{
		{"plain", "edge", "edge"},
		{"invalid utf8", "a\xffb", "a\uFFFDb"},
		{"nul removed", "a\x00b\x00", "ab"},
		{"truncate", long, long[:MaxLen]},
		{"truncate on rune boundary", boundary, strings.Repeat("a", MaxLen-1)},
		{"exactly max", long[:MaxLen], long[:MaxLen]},
		{"emoji kept", "🚀", "🚀"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Clean(tt.in)
			if got != tt.want {
				t.Errorf("Clean() = %q (len %d), want len %d", got[:min(len(got), 20)], len(got), len(tt.want))
			}
			if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 || len(got) > MaxLen {
				t.Errorf("Clean() result violates invariants")
			}
		})
	}
}

func TestFromKeyValues(t *testing.T) {
	t.Run("later duplicates win", func(t *testing.T) {
		l := FromKeyValues([]*protobufs.KeyValue{kv("a", str("1")), kv("a", str("2"))})
		if l.Attrs["a"] != "2" {
			t.Fatalf("a = %q, want 2", l.Attrs["a"])
		}
	})
	t.Run("labels prefix dropped", func(t *testing.T) {
		l := FromKeyValues([]*protobufs.KeyValue{kv("labels.wave", str("1")), kv("site.id", str("007")), kv("labels.x", i64(1))})
		if _, ok := l.Attrs["labels.wave"]; ok {
			t.Fatal("labels.wave kept")
		}
		if l.Attrs["site.id"] != "007" {
			t.Fatalf("site.id = %q", l.Attrs["site.id"])
		}
		if fmt.Sprint(l.LabelKeys) != "[labels.wave labels.x]" {
			t.Fatalf("LabelKeys = %v", l.LabelKeys)
		}
	})
	t.Run("limit", func(t *testing.T) {
		var kvs []*protobufs.KeyValue
		for i := range 300 {
			kvs = append(kvs, kv(fmt.Sprintf("k%03d", i), i64(int64(i))))
		}
		l := FromKeyValues(kvs)
		if len(l.Attrs) != MaxPerList || l.Dropped != 44 {
			t.Fatalf("kept %d dropped %d, want 256 and 44", len(l.Attrs), l.Dropped)
		}
		if _, ok := l.Attrs["k256"]; ok {
			t.Fatal("entry past the limit kept")
		}
		if l.Attrs["k255"] != "255" {
			t.Fatal("last entry within the limit missing")
		}
	})
	t.Run("keys and values cleaned", func(t *testing.T) {
		l := FromKeyValues([]*protobufs.KeyValue{kv("k\x00\xff", str(strings.Repeat("é", 3000)))})
		v, ok := l.Attrs["k\uFFFD"]
		if !ok {
			t.Fatalf("cleaned key missing: %v", l.Attrs)
		}
		if len(v) != MaxLen || !utf8.ValidString(v) {
			t.Fatalf("value len %d valid %v", len(v), utf8.ValidString(v))
		}
	})
	t.Run("nil entries ignored", func(t *testing.T) {
		l := FromKeyValues([]*protobufs.KeyValue{nil, kv("a", nil)})
		if len(l.Attrs) != 1 || l.Attrs["a"] != "" {
			t.Fatalf("Attrs = %v", l.Attrs)
		}
	})
}

func TestView(t *testing.T) {
	v := NewView(
		map[string]string{"service.name": "otelcol", "host.name": "ident"},
		map[string]string{"host.name": "nonident", "site.id": "007"},
		map[string]string{"wave": "1"},
		nil,
	)
	want := map[string]string{"service.name": "otelcol", "host.name": "ident", "site.id": "007", "labels.wave": "1"}
	if fmt.Sprint(v) != fmt.Sprint(want) || !maps.Equal(v.Map(), want) || v.Len() != len(want) {
		t.Fatalf("View = %v, want %v", v, want)
	}
	for k, w := range want {
		if got, ok := v.Get(k); !ok || got != w {
			t.Errorf("Get(%q) = %q %v, want %q", k, got, ok, w)
		}
	}
	for _, k := range []string{"", "host", "labels.", "labels.wave2", "zzz"} {
		if got, ok := v.Get(k); ok {
			t.Errorf("Get(%q) = %q, not in the view", k, got)
		}
	}
	var keys []string
	for k := range v.All() {
		keys = append(keys, k)
	}
	if !slices.IsSorted(keys) || len(keys) != len(want) {
		t.Errorf("All yields %v, want the keys sorted", keys)
	}
	if !v.Equal(ViewOf(want)) || v.Equal(ViewOf(map[string]string{"a": "b"})) || v.Equal(View{}) {
		t.Error("Equal compares the entries")
	}
}

// Values of every length read back whole: a view packs them into one
// string, each behind its length.
func TestViewValueLengths(t *testing.T) {
	for _, n := range []int{0, 1, 31, 32, 63, 64, 127, 128, 300, 4095, MaxLen} {
		m := map[string]string{"a": "x", "b": strings.Repeat("v", n), "c": "", "d": strings.Repeat("w", n/2)}
		v := ViewOf(m)
		if !maps.Equal(v.Map(), m) {
			t.Fatalf("length %d: view holds other values", n)
		}
		for k, want := range m {
			if got := v.Value(k); got != want {
				t.Fatalf("length %d: Value(%q) has %d bytes, want %d", n, k, len(got), len(want))
			}
		}
		if !v.Equal(ViewOf(maps.Clone(m))) {
			t.Fatalf("length %d: equal views differ", n)
		}
		m["b"] += "v"
		if v.Equal(ViewOf(m)) {
			t.Fatalf("length %d: views of different values are equal", n)
		}
	}
}

func FuzzView(f *testing.F) {
	f.Add("k", "v", "k2", "")
	f.Add("id", "0193a6f2-7c1e-7d3a-9b4f-00000000002a", "up", "0193A6F2-7C1E-7D3A-9B4F-00000000002A")
	f.Add("", strings.Repeat("\x80", 200), "a", "\x00")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		m := map[string]string{k1: v1, k2: v2}
		v := ViewOf(m)
		if !maps.Equal(v.Map(), m) || v.Len() != len(m) {
			t.Fatalf("view %v of %v", v, m)
		}
		for k, want := range m {
			if got, ok := v.Get(k); !ok || got != want {
				t.Fatalf("Get(%q) = %q %v, want %q", k, got, ok, want)
			}
		}
	})
}

// The zero view is unknown; an empty map is a known, empty view.
func TestViewKnown(t *testing.T) {
	var zero View
	if zero.Known() || zero.Len() != 0 || zero.Map() != nil || zero.Value("a") != "" || !zero.Equal(ViewOf(nil)) {
		t.Error("the zero View is not unknown")
	}
	empty := ViewOf(map[string]string{})
	if !empty.Known() || empty.Len() != 0 || empty.Map() == nil || empty.Equal(zero) {
		t.Error("an empty map is not a known, empty view")
	}
	if d := Describe(nil, nil, nil, nil); !d.View.Known() {
		t.Error("a description without attributes has an unknown view")
	}
}

// Views with the same keys share one key list when asked to.
func TestViewSharesKeys(t *testing.T) {
	s := &sharing{}
	a := NewView(map[string]string{"service.name": "a"}, map[string]string{"host.name": "h1"}, nil, s)
	b := NewView(map[string]string{"service.name": "b"}, map[string]string{"host.name": "h2"}, nil, s)
	if a.v.keys != b.v.keys {
		t.Error("equal key lists not shared")
	}
	if a.Value("host.name") != "h1" || b.Value("host.name") != "h2" {
		t.Errorf("values: %v %v", a, b)
	}
}

func FuzzString(f *testing.F) {
	f.Add("a", int64(1), 1.5, []byte{1}, true)
	f.Add("\xff\x00", int64(-1), math.Inf(-1), []byte{}, false)
	f.Fuzz(func(t *testing.T, s string, i int64, d float64, b []byte, flag bool) {
		v := arr(str(s), i64(i), dbl(d), byts(b), boolean(flag), kvl(kv(s, dbl(d)), kv("x", arr(str(s)))))
		for _, one := range []*protobufs.AnyValue{v, str(s), dbl(d), byts(b)} {
			got := Clean(String(one))
			if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 || len(got) > MaxLen {
				t.Fatalf("cleaned conversion violates invariants: %q", got)
			}
		}
		if String(v) == "" {
			t.Fatal("array converted to empty string")
		}
	})
}
