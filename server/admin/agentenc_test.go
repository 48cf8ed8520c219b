package admin

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// appendString must quote exactly as encoding/json does.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"b\s`, "<a href='x'>&amp;</a>", "\x00\x01\b\f\n\r\t\x1f\x7f",
		"ö → ✗ 😀", "\u2028\u2029", "bad \xff\xfe utf8 \xe2\x82", "registered with token \"edge\"", "\xed\xa0\x80 surrogate"} {
		f.Add(s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString([]byte("x"), s); string(got[1:]) != string(want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got[1:], want)
		}
	})
}
