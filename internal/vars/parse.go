package vars

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultProvider is the provider prefixed to a variable written without a
// dot when no other default is configured: ${HOSTNAME} is ${env.HOSTNAME}.
const DefaultProvider = "env"

// Template is a parsed string: literal text interleaved with references.
// A Template is immutable and safe for concurrent use.
type Template struct {
	src   string
	parts []part
	// whole is true when the string is exactly one reference and nothing
	// else, so a variable result keeps its type.
	whole bool
	// sizeHint pre-sizes interpolation: the text plus a typical value per
	// reference.
	sizeHint int
}

// part is either literal text (ref == nil) or a reference.
type part struct {
	text string
	// raw is the literal text exactly as written: it differs from text
	// only where an escape ($${…}) was unescaped.
	raw string
	ref *Reference
}

// Reference is one ${…} with its alternatives in evaluation order.
type Reference struct {
	// Source is the reference exactly as written, braces included.
	Source string
	Alts   []Alternative
}

// Alternative is a constant (Const) or a variable (Path, default provider
// already prefixed, so Path has at least two segments).
type Alternative struct {
	Const bool
	Text  string
	Path  []string
}

// Provider is the provider a variable alternative reads, "" for a constant.
func (a Alternative) Provider() string {
	if a.Const {
		return ""
	}
	return a.Path[0]
}

// Source is the original template text.
func (t *Template) Source() string { return t.src }

// References lists the evaluated references in order of appearance; escaped
// and collector references are text and not listed.
func (t *Template) References() []*Reference {
	var out []*Reference
	for _, p := range t.parts {
		if p.ref != nil {
			out = append(out, p.ref)
		}
	}
	return out
}

// HasReferences reports whether evaluating t reads any data.
func (t *Template) HasReferences() bool {
	for _, p := range t.parts {
		if p.ref != nil {
			return true
		}
	}
	return false
}

// Parse parses src with the default provider "env".
func Parse(src string) (*Template, error) { return ParseWith(src, DefaultProvider) }

// ParseWith parses src, prefixing defaultProvider to variables without a dot.
// Errors are *ParseError.
func ParseWith(src, defaultProvider string) (*Template, error) {
	if defaultProvider == "" {
		defaultProvider = DefaultProvider
	}
	p := parser{src: src, def: defaultProvider}
	if err := p.run(); err != nil {
		return nil, err
	}
	t := &Template{src: src, parts: p.parts}
	t.whole = len(t.parts) == 1 && t.parts[0].ref != nil && t.parts[0].ref.Source == src
	for _, p := range t.parts {
		if p.ref != nil {
			t.sizeHint += 64
		} else {
			t.sizeHint += len(p.text)
		}
	}
	return t, nil
}

type parser struct {
	src   string
	def   string
	parts []part
	// Pending literal text: pieces of src, joined only when there is more
	// than one (an escape or a collector reference splits the text), so the
	// common case allocates nothing.
	pieces []string
	// rawPieces are the same pieces as written; nil until an escape makes
	// them differ.
	rawPieces []string
}

func (p *parser) addText(t string) { p.addRawText(t, t) }

// addRawText adds literal text t that was written as raw.
func (p *parser) addRawText(t, raw string) {
	if t == "" {
		return
	}
	if p.rawPieces == nil && t != raw {
		p.rawPieces = append(make([]string, 0, len(p.pieces)+1), p.pieces...)
	}
	p.pieces = append(p.pieces, t)
	if p.rawPieces != nil {
		p.rawPieces = append(p.rawPieces, raw)
	}
}

func (p *parser) errAt(pos int, msg string) *ParseError {
	e := &ParseError{Template: p.src, Pos: pos, Msg: msg}
	if pos < len(p.src) {
		r, size := utf8.DecodeRuneInString(p.src[pos:])
		if r == utf8.RuneError && size <= 1 {
			e.Char = p.src[pos : pos+1]
		} else {
			e.Char = string(r)
		}
	}
	return e
}

func (p *parser) flushText() {
	var pt part
	switch len(p.pieces) {
	case 0:
		return
	case 1:
		pt.text = p.pieces[0]
	default:
		pt.text = strings.Join(p.pieces, "")
	}
	pt.raw = pt.text
	if p.rawPieces != nil {
		pt.raw = strings.Join(p.rawPieces, "")
	}
	p.parts = append(p.parts, pt)
	p.pieces, p.rawPieces = p.pieces[:0], nil
}

func (p *parser) run() error {
	s := p.src
	lit := 0 // start of literal text not yet copied
	for i := 0; i < len(s); {
		if s[i] != '$' {
			i++
			continue
		}
		escaped := false
		open := i
		switch {
		case i+1 < len(s) && s[i+1] == '{':
		case i+2 < len(s) && s[i+1] == '$' && s[i+2] == '{':
			escaped = true
			open = i + 1
		default:
			i++ // a lone '$' (or "$$" not before '{') is text
			continue
		}
		p.addText(s[lit:i])
		end, err := p.findClose(open)
		if err != nil {
			return err
		}
		body := s[open+2 : end]
		src := s[open : end+1]
		collector := hasUnquotedColon(body)
		var ref *Reference
		if !collector {
			alts, err := p.parseBody(open+2, end)
			if err != nil {
				return err
			}
			ref = &Reference{Source: src, Alts: alts}
		}
		switch {
		case escaped:
			p.addRawText(src, s[i:end+1])
		case collector:
			p.addText(src)
		default:
			p.flushText()
			p.parts = append(p.parts, part{ref: ref})
		}
		i = end + 1
		lit = i
	}
	p.addText(s[lit:])
	p.flushText()
	return nil
}

// findClose returns the index of the '}' closing the reference whose "${"
// starts at open. Quotes are only recognized at the start of an alternative
// (after "${" or '|' and optional whitespace), so a quote elsewhere is left
// for parseBody to reject with a precise message.
func (p *parser) findClose(open int) (int, error) {
	s := p.src
	atStart := true
	for i := open + 2; i < len(s); {
		c := s[i]
		switch {
		case c == '}':
			return i, nil
		case c == '$' && i+1 < len(s) && s[i+1] == '{':
			return 0, p.errAt(i, `nested "${" inside a reference`)
		case atStart && (c == '\'' || c == '"'):
			q, ok := skipQuoted(s, i)
			if !ok {
				return 0, p.errAt(i, "unterminated quote")
			}
			i = q + 1
			atStart = false
			continue
		case c == '|':
			atStart = true
		case isSpace(c):
		default:
			atStart = false
		}
		i++
	}
	return 0, p.errAt(open, `unclosed "${"`)
}

// skipQuoted returns the index of the quote closing the one at s[i].
func skipQuoted(s string, i int) (int, bool) {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if j+1 < len(s) && isEscapable(s[j+1]) {
				j++
			}
		case q:
			return j, true
		}
	}
	return 0, false
}

func isEscapable(c byte) bool { return c == '\\' || c == '\'' || c == '"' }

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// hasUnquotedColon reports whether a body is Collector syntax. The quote rule
// is the one findClose uses.
func hasUnquotedColon(body string) bool {
	atStart := true
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == ':':
			return true
		case atStart && (c == '\'' || c == '"'):
			q, ok := skipQuoted(body, i)
			if !ok {
				return false
			}
			i = q
			atStart = false
		case c == '|':
			atStart = true
		case isSpace(c):
		default:
			atStart = false
		}
	}
	return false
}

// parseBody parses the alternatives in src[lo:hi] (hi is the closing '}').
func (p *parser) parseBody(lo, hi int) ([]Alternative, error) {
	s := p.src
	if strings.TrimFunc(s[lo:hi], func(r rune) bool { return r < utf8.RuneSelf && isSpace(byte(r)) }) == "" {
		return nil, p.errAt(hi, "empty reference body")
	}
	alts := make([]Alternative, 0, 2)
	i := lo
	for {
		for i < hi && isSpace(s[i]) {
			i++
		}
		if i == hi || s[i] == '|' {
			return nil, p.errAt(i, "empty alternative")
		}
		var alt Alternative
		var err error
		if s[i] == '\'' || s[i] == '"' {
			alt, i, err = p.parseConst(i, hi)
		} else {
			alt, i, err = p.parseVar(i, hi)
		}
		if err != nil {
			return nil, err
		}
		alts = append(alts, alt)
		// i is at whitespace, '|' or hi.
		for i < hi && isSpace(s[i]) {
			i++
		}
		if i == hi {
			return alts, nil
		}
		if s[i] != '|' {
			if s[i] == '\'' || s[i] == '"' {
				return nil, p.errAt(i, "quote in the middle of an alternative")
			}
			return nil, p.errAt(i, "unexpected character after a constant or name; separate alternatives with '|'")
		}
		i++
	}
}

// parseConst parses the quoted constant starting at src[i] and returns the
// index just past the closing quote.
func (p *parser) parseConst(i, hi int) (Alternative, int, error) {
	s := p.src
	q := s[i]
	// Without a backslash the constant is a substring of the source.
	if k := strings.IndexByte(s[i+1:hi], q); k >= 0 && strings.IndexByte(s[i+1:i+1+k], '\\') < 0 {
		return Alternative{Const: true, Text: s[i+1 : i+1+k]}, i + 2 + k, nil
	}
	var b strings.Builder
	for j := i + 1; j < hi; j++ {
		c := s[j]
		switch {
		case c == '\\' && j+1 < hi && isEscapable(s[j+1]):
			b.WriteByte(s[j+1])
			j++
		case c == q:
			return Alternative{Const: true, Text: b.String()}, j + 1, nil
		default:
			b.WriteByte(c)
		}
	}
	return Alternative{}, 0, p.errAt(i, "unterminated quote")
}

// parseVar parses a dotted name starting at src[i] and returns the index of
// the first byte after it.
func (p *parser) parseVar(i, hi int) (Alternative, int, error) {
	s := p.src
	segs := make([]string, 0, 4)
	segStart := i
	j := i
	for j < hi {
		c := s[j]
		if c == '|' {
			break
		}
		if isSpace(c) {
			// Whitespace may only trail the name.
			k := j
			for k < hi && isSpace(s[k]) {
				k++
			}
			if k == hi || s[k] == '|' {
				break
			}
			return Alternative{}, 0, p.errAt(j, "whitespace inside a name")
		}
		switch c {
		case '.':
			if j == segStart {
				return Alternative{}, 0, p.errAt(j, "empty name segment")
			}
			segs = append(segs, s[segStart:j])
			j++
			segStart = j
			continue
		case '\'', '"':
			return Alternative{}, 0, p.errAt(j, "quote in the middle of an alternative")
		}
		r, size := utf8.DecodeRuneInString(s[j:])
		if !isNameRune(r) || (r == utf8.RuneError && size <= 1) {
			return Alternative{}, 0, p.errAt(j, "character not allowed in a name")
		}
		j += size
	}
	if j == segStart {
		// Trailing dot: point at it.
		return Alternative{}, 0, p.errAt(j-1, "empty name segment")
	}
	segs = append(segs, s[segStart:j])
	if len(segs) == 1 {
		segs = append(segs, segs[0])
		segs[0] = p.def
	}
	return Alternative{Path: segs}, j, nil
}

func isNameRune(r rune) bool {
	return r == '_' || r == '-' || r == '/' || unicode.IsLetter(r) || unicode.IsDigit(r)
}
