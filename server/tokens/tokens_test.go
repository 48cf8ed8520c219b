package tokens

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestNewAndMatch(t *testing.T) {
	tok, secret, err := New("edge-north", map[string]string{"wave": "1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(tok.Hash), secret) {
		t.Fatal("hash contains the secret")
	}
	id, ok := IDOf(secret)
	if !ok || id != tok.ID {
		t.Fatalf("IDOf = %q,%v want %q", id, ok, tok.ID)
	}
	if !tok.Matches(secret) {
		t.Fatal("own secret does not match")
	}
	if tok.Matches(secret + "x") {
		t.Fatal("altered secret matches")
	}
	for _, bad := range []string{"", "myr_", "myr_short_x", "nope_0123456789ab_x", "myr_0123456789abx"} {
		if _, ok := IDOf(bad); ok {
			t.Errorf("IDOf(%q) accepted", bad)
		}
	}
}

func TestValidateLabels(t *testing.T) {
	many := map[string]string{}
	for i := range 21 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   []string // substrings that must all appear
	}{
		{"ok", map[string]string{"wave": "1", "region": "north"}, nil},
		{"nil ok", nil, nil},
		{"too many", many, []string{"21 labels, at most 20"}},
		{"empty key", map[string]string{"": "x"}, []string{"empty key"}},
		{"long key", map[string]string{strings.Repeat("k", 64): "x"}, []string{"64 characters, at most 63"}},
		{"63 ok", map[string]string{strings.Repeat("k", 63): strings.Repeat("v", 253)}, nil},
		{"whitespace", map[string]string{"a b": "x"}, []string{"whitespace"}},
		{"equals", map[string]string{"a=b": "x"}, []string{"'='"}},
		{"long value", map[string]string{"k": strings.Repeat("v", 254)}, []string{"254 characters, at most 253"}},
		{"every violation", map[string]string{"a b": strings.Repeat("v", 300), "c=d": "x"}, []string{"whitespace", "'='", "300 characters"}},
		{"NUL in a key", map[string]string{"a\x00b": "x"}, []string{"control characters"}},
		{"escape in a value", map[string]string{"k": "\x1b[31mred"}, []string{"control characters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateLabels(tt.labels)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
