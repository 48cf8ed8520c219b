package blueprint

import (
	"bytes"
	"errors"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// The renderer writes YAML itself rather than through yaml.Encoder: the
// rendered document is a fixed skeleton around authored config nodes, and
// the library's emitter costs ~150 KB of garbage per render, which
// dominated rendering a large estate. The writer only ever produces block
// style (plus {} and [] for empty collections and flow lists of ids), and
// it keeps a scalar plain only when it was plain in the authored file and
// is plain-safe in block context; everything else is double-quoted, with
// its tag written out when it is not a string, so the document reads back
// to exactly the authored values. FuzzLoad checks that round trip.

// emitBuf is what a document is written into, with the most bytes it may
// take (0: no bound). Every line starts with writeIndent, which stops the
// writing once the bound is passed: a document many times over its bound
// (a deeply nested value's indentation grows with its depth) is never
// built in full.
type emitBuf struct {
	bytes.Buffer
	max int
}

// errOverMax stops writing a document past emitBuf.max (see Plan.YAMLWithin).
var errOverMax = errors.New("over the bound")

// writeBlockMapping writes the pairs of mapping n at the given indent.
// When inline is true the first pair continues the current line (after
// "- ").
func writeBlockMapping(b *emitBuf, n *yaml.Node, indent int, inline bool) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if i > 0 || !inline {
			writeIndent(b, indent)
		}
		writeScalar(b, n.Content[i])
		b.WriteByte(':')
		writeValue(b, n.Content[i+1], indent)
	}
}

// writeValue writes a value after "key:" or "-", ending the line.
func writeValue(b *emitBuf, v *yaml.Node, indent int) {
	switch {
	case v.Kind == yaml.MappingNode && len(v.Content) == 0:
		b.WriteString(" {}\n")
	case v.Kind == yaml.SequenceNode && len(v.Content) == 0:
		b.WriteString(" []\n")
	case v.Kind == yaml.MappingNode:
		b.WriteByte('\n')
		writeBlockMapping(b, v, indent+2, false)
	case v.Kind == yaml.SequenceNode:
		b.WriteByte('\n')
		writeBlockSequence(b, v, indent+2)
	default:
		b.WriteByte(' ')
		writeScalar(b, v)
		b.WriteByte('\n')
	}
}

func writeBlockSequence(b *emitBuf, n *yaml.Node, indent int) {
	for _, item := range n.Content {
		writeIndent(b, indent)
		b.WriteByte('-')
		if item.Kind == yaml.MappingNode && len(item.Content) > 0 {
			b.WriteByte(' ')
			writeBlockMapping(b, item, indent+2, true)
			continue
		}
		writeValue(b, item, indent)
	}
}

// writeFlowIDs writes a flow list of rendered ids.
func writeFlowIDs(b *emitBuf, ids []string) {
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		writeFlowID(b, id)
	}
	b.WriteString("]\n")
}

// writeFlowID writes one rendered id of a flow list.
func writeFlowID(b *emitBuf, id string) {
	if plainID(id) {
		b.WriteString(id)
	} else {
		b.WriteString(strconv.Quote(id))
	}
}

// writeKey writes a skeleton key (section names, rendered ids).
func writeKey(b *emitBuf, indent int, key string) {
	writeIndent(b, indent)
	if plainID(key) {
		b.WriteString(key)
	} else {
		b.WriteString(strconv.Quote(key))
	}
	b.WriteByte(':')
}

func writeIndent(b *emitBuf, n int) {
	if b.max > 0 && b.Len() > b.max {
		panic(errOverMax)
	}
	for range n {
		b.WriteByte(' ')
	}
}

// plainID reports whether an id can be written plain anywhere, flow lists
// included, and reads back as the same string.
func plainID(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case (c >= '0' && c <= '9' || c == '.' || c == '/' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return !yamlSpecial(s)
}

// yamlSpecial reports plain words that YAML 1.1/1.2 resolvers read as
// something other than a string. Numbers cannot reach it: plainID refuses
// a leading digit, sign or dot.
func yamlSpecial(s string) bool {
	switch strings.ToLower(s) {
	case "null", "true", "false", "yes", "no", "on", "off", "y", "n", ".inf", ".nan":
		return true
	}
	return false
}

func writeScalar(b *emitBuf, n *yaml.Node) {
	if n.Tag == "!!null" && n.Style&yaml.TaggedStyle == 0 {
		b.WriteString("null")
		return
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 && plainSafe(n.Value) {
		if n.Style&yaml.TaggedStyle != 0 {
			b.WriteString(n.Tag)
			b.WriteByte(' ')
		}
		b.WriteString(n.Value)
		return
	}
	if n.Tag != "" && n.Tag != "!!str" {
		b.WriteString(n.Tag)
		b.WriteByte(' ')
	}
	writeDoubleQuoted(b, n.Value)
}

// plainSafe is a conservative check that a value which was plain in the
// authored file stays one plain scalar in block context.
func plainSafe(s string) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	if strings.ContainsAny(s[:1], "-?:,[]{}#&*!|>'\"%@`") && !(len(s) > 1 && (s[0] == '-' || s[0] == '?' || s[0] == ':') && s[1] != ' ') {
		return false
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == 0xfeff || r > 0xffff || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return !strings.HasPrefix(s, "---") && !strings.HasPrefix(s, "...")
}

// writeDoubleQuoted writes s as a YAML double-quoted scalar.
func writeDoubleQuoted(b *emitBuf, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0xfeff || r == 0x2028 || r == 0x2029:
			b.WriteString(`\u`)
			h := strconv.FormatInt(int64(r), 16)
			b.WriteString(strings.Repeat("0", 4-len(h)) + h)
		case r == 0xfffd:
			// Invalid UTF-8 decodes to U+FFFD; the loader only accepts
			// UTF-8 input, so this is the authored character.
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
