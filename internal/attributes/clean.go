package attributes

import (
	"strings"
	"unicode/utf8"
)

// MaxLen is the most bytes a key or a value keeps after cleaning.
const MaxLen = 4096

// Clean makes s valid UTF-8 (each invalid sequence becomes U+FFFD), removes
// NUL bytes and cuts the result to at most MaxLen bytes on a rune boundary.
func Clean(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	return truncate(s, MaxLen)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
