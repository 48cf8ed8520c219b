package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"
)

// TimeFormat is how a record's time is written: UTC, RFC 3339 with
// exactly nine fractional digits.
const TimeFormat = "2006-01-02T15:04:05.000000000Z"

// Canonical is r's canonical JSON, which its hash covers: the members id,
// time, actor, role, via, action, target, source, requestId, outcome and
// detail in this order, without white space, strings escaped as the
// package documentation says.
func (r Record) Canonical() []byte {
	return r.appendCanonical(make([]byte, 0, 256+len(r.Detail)))
}

// appendCanonicalOpen appends r's canonical JSON to b, without its closing brace.
func (r Record) appendCanonicalOpen(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, r.ID, 10)
	b = append(b, `,"time":"`...)
	b = r.Time.UTC().AppendFormat(b, TimeFormat)
	b = append(b, '"')
	for _, f := range []struct{ name, v string }{{"actor", r.Actor}, {"role", r.Role}, {"via", r.Via}, {"action", r.Action},
		{"target", r.Target}, {"source", r.Source}, {"requestId", r.RequestID}, {"outcome", r.Outcome}, {"detail", r.Detail}} {
		b = append(b, `,"`...)
		b = append(b, f.name...)
		b = append(b, `":`...)
		b = appendString(b, f.v)
	}
	return b
}

// appendCanonical appends r's canonical JSON to b.
func (r Record) appendCanonical(b []byte) []byte {
	return append(r.appendCanonicalOpen(b), '}')
}

// HashAfter is the hash of r following a record whose hash is prev: the
// lower-case hex SHA-256 of prev's 64 hex digits followed by r's
// canonical JSON.
func (r Record) HashAfter(prev string) string {
	var buf [2048]byte // a record's canonical JSON fits, whatever its strings' bounds
	b := append(buf[:0], prev...)
	sum := sha256.Sum256(r.appendCanonical(b))
	return hex.EncodeToString(sum[:])
}

// MarshalJSON writes r's canonical JSON with prev and hash added, so that
// an export holds, member for member, what the hash covers.
func (r Record) MarshalJSON() ([]byte, error) {
	b := r.appendCanonicalOpen(make([]byte, 0, 400+len(r.Detail)))
	b = append(b, `,"prev":`...)
	b = appendString(b, r.Prev)
	b = append(b, `,"hash":`...)
	b = appendString(b, r.Hash)
	return append(b, '}'), nil
}

// appendString writes s as a JSON string escaping only what JSON
// requires: the quote, the backslash, and characters below U+0020 (\b,
// \t, \n, \f, \r by name, the others as \u00xx); every other byte is
// copied. s is valid UTF-8 (see Record.normalized); invalid bytes are
// written as U+FFFD all the same, as strings.ToValidUTF8 does.
func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\b':
			b = append(b, `\b`...)
		case '\t':
			b = append(b, `\t`...)
		case '\n':
			b = append(b, `\n`...)
		case '\f':
			b = append(b, `\f`...)
		case '\r':
			b = append(b, `\r`...)
		default:
			b = append(b, `\u00`...)
			b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
