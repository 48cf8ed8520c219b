package console

import (
	"strings"
	"testing"
)

func TestDisplayTextIsInertAndBounded(t *testing.T) {
	for _, tc := range []struct {
		name, in  string
		max       int
		multiline bool
		want      string
	}{
		{"plain", "edge-001", 10, false, "edge-001"},
		{"markup stays text (escaped by the template)", `"><img onerror=x>`, 100, false, `"><img onerror=x>`},
		{"right-to-left override", "abc\u202Etxt.exe", 100, false, "abc⟨U+202E⟩txt.exe"},
		{"isolates and marks", "\u2066a\u2069\u200f", 100, false, "⟨U+2066⟩a⟨U+2069⟩⟨U+200F⟩"},
		{"NUL and controls", "a\x00b\x1bc\x7f", 100, false, "a⟨U+0000⟩b⟨U+001B⟩c⟨U+007F⟩"},
		{"newline on one line", "a\nb", 100, false, "a⟨U+000A⟩b"},
		{"newline kept when multiline", "a\n\tb\r", 100, true, "a\n\tb⟨U+000D⟩"},
		{"invalid UTF-8", "a\xffb", 100, false, "a\uFFFDb"},
		{"cut on characters", "ééééé", 3, false, "ééé… (2 more characters)"},
		{"exactly max", "abc", 3, false, "abc"},
		{"zero width and BOM", "a\u200bb\ufeff", 100, false, "a⟨U+200B⟩b⟨U+FEFF⟩"},
	} {
		if got := displayText(tc.in, tc.max, tc.multiline); got != tc.want {
			t.Errorf("%s: displayText(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
	long := displayText(strings.Repeat("x", 1<<20), shortText, false)
	if len(long) > shortText+40 || !strings.HasSuffix(long, "(1048376 more characters)") {
		t.Errorf("a 1 MiB value shows as %d bytes ending %q", len(long), long[len(long)-30:])
	}
}
