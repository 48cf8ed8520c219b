package console

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Display bounds, in characters.
const (
	shortText = 200
	longText  = 4096
)

// displayText makes a peer-supplied string safe to show beyond HTML
// escaping (which html/template does): invalid UTF-8 becomes U+FFFD;
// control, bidirectional-override and invisible characters become visible
// markers such as ⟨U+202E⟩, so a value cannot reorder or hide what is shown
// next to it; newlines and tabs stay when multiline; the result is cut at
// max characters with a note of how much was left out.
func displayText(s string, max int, multiline bool) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	var b strings.Builder
	n := 0
	for i, r := range s {
		if n == max {
			rest := utf8.RuneCountInString(s[i:])
			fmt.Fprintf(&b, "… (%d more characters)", rest)
			break
		}
		n++
		switch {
		case multiline && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case hidden(r):
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// hidden reports characters that are invisible or change the display of
// their neighbours: C0 and C1 controls, DEL, bidirectional marks, embeddings,
// overrides and isolates, zero-width characters, line and paragraph
// separators and the byte order mark.
func hidden(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200b, r == 0x200c, r == 0x200d, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x2028 && r <= 0x202e, r >= 0x2060 && r <= 0x2069, r == 0xfeff:
		return true
	}
	return false
}
