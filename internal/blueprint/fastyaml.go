package blueprint

import (
	yaml "go.yaml.in/yaml/v3"
)

// Most authored files are plain block YAML: nested mappings and lists of
// unquoted words, numbers and addresses. go-yaml's scanner, parser and
// node builder cost several allocations per token, which made parsing the
// largest part of loading a big estate. fastDocument builds the node tree of
// such a file directly, exactly as go-yaml would (kinds, tags, values,
// styles, lines and columns; comments are dropped, and nothing here reads
// them), and gives up on anything outside that subset (quotes, flow
// collections, anchors, tags, block scalars, multi-line scalars, documents
// markers, tabs, non-ASCII bytes, …) so that go-yaml parses it and reports
// its errors. FuzzFastDocument holds the two to the same trees.

// fastLine is one line holding content, with comment and trailing blanks
// cut off.
type fastLine struct {
	indent int    // column (0-based) of text
	text   string // never empty
	num    int    // 1-based line number
}

type fastParser struct {
	lines []fastLine
	i     int
	nodes []yaml.Node  // slab the tree's nodes come from
	ptrs  []*yaml.Node // slab the Content slices come from
	stack []*yaml.Node // children of the containers being built
	tmp   yaml.Node    // scratch node for ShortTag
}

// fastScratch keeps what one load worker reuses from file to file: the
// line and stack buffers, and the slabs the tree is built in. Reusing the
// slabs is safe because the loader never keeps a node of the parsed
// document: it takes strings from it and copies configs (parseConfig).
type fastScratch struct {
	lines []fastLine
	stack []*yaml.Node
	nodes []yaml.Node
	ptrs  []*yaml.Node
}

// fastDocument returns the top-level node of src and true, or nil and false
// when src is outside the subset (which includes every malformed file).
func fastDocument(src string, sc *fastScratch) (*yaml.Node, bool) {
	if sc == nil {
		sc = &fastScratch{}
	}
	lines, ok := fastLines(src, sc.lines[:0])
	sc.lines = lines
	if !ok || len(lines) == 0 {
		return nil, false
	}
	p := fastParser{lines: lines, nodes: sc.nodes[:0], ptrs: sc.ptrs[:0], stack: sc.stack[:0]}
	if cap(p.nodes) < 2*len(lines)+2 {
		p.nodes = make([]yaml.Node, 0, 4*len(lines)+2)
		p.ptrs = make([]*yaml.Node, 0, 4*len(lines)+2)
	}
	top, ok := p.block(lines[0].indent)
	sc.stack, sc.nodes, sc.ptrs = p.stack[:0], p.nodes[:0], p.ptrs[:0]
	if !ok || p.i != len(lines) || top.Kind != yaml.MappingNode {
		return nil, false
	}
	return top, true
}

// fastLines splits src into content lines; ok is false when a byte or a
// line is outside the subset.
func fastLines(src string, out []fastLine) ([]fastLine, bool) {
	num := 0
	for start := 0; start < len(src); {
		end := start
		for end < len(src) && src[end] != '\n' {
			c := src[end]
			if c < 0x20 || c >= 0x7f {
				return nil, false // tabs, CR, control and non-ASCII bytes
			}
			end++
		}
		num++
		line := src[start:end]
		start = end + 1
		ind := 0
		for ind < len(line) && line[ind] == ' ' {
			ind++
		}
		text := line[ind:]
		if text == "" || text[0] == '#' {
			continue
		}
		if text[0] == '%' || (len(text) >= 3 && (text[:3] == "---" || text[:3] == "...")) {
			return nil, false // directives and document markers
		}
		for j := 1; j < len(text); j++ {
			if text[j] == '#' && text[j-1] == ' ' {
				text = text[:j]
				break
			}
		}
		for text[len(text)-1] == ' ' {
			text = text[:len(text)-1]
		}
		out = append(out, fastLine{indent: ind, text: text, num: num})
	}
	return out, true
}

func (p *fastParser) node() *yaml.Node {
	if len(p.nodes) == cap(p.nodes) {
		// Earlier nodes keep pointing into the old slab.
		p.nodes = make([]yaml.Node, 0, 2*cap(p.nodes)+32)
	}
	p.nodes = p.nodes[:len(p.nodes)+1]
	n := &p.nodes[len(p.nodes)-1]
	*n = yaml.Node{}
	return n
}

// content moves the children pushed since start into the container.
func (p *fastParser) content(n *yaml.Node, start int) {
	k := len(p.stack) - start
	if len(p.ptrs)+k > cap(p.ptrs) {
		p.ptrs = make([]*yaml.Node, 0, max(k, 2*cap(p.ptrs)+32))
	}
	off := len(p.ptrs)
	p.ptrs = append(p.ptrs, p.stack[start:]...)
	n.Content = p.ptrs[off : off+k : off+k]
	clear(p.stack[start:])
	p.stack = p.stack[:start]
}

func isEntry(text string) bool { return text[0] == '-' && (len(text) == 1 || text[1] == ' ') }

// block parses the mapping or list whose first line is the current one,
// at the given indent.
func (p *fastParser) block(indent int) (*yaml.Node, bool) {
	if isEntry(p.lines[p.i].text) {
		return p.sequence(indent)
	}
	return p.mapping(indent)
}

func (p *fastParser) sequence(indent int) (*yaml.Node, bool) {
	first := p.lines[p.i]
	n := p.node()
	n.Kind, n.Tag, n.Line, n.Column = yaml.SequenceNode, "!!seq", first.num, indent+1
	start := len(p.stack)
	for p.i < len(p.lines) && p.lines[p.i].indent == indent && isEntry(p.lines[p.i].text) {
		l := p.lines[p.i]
		if len(l.text) == 1 {
			// "-" alone: the item is the block on the following lines.
			p.i++
			if p.i == len(p.lines) || p.lines[p.i].indent <= indent {
				return nil, false
			}
			item, ok := p.block(p.lines[p.i].indent)
			if !ok {
				return nil, false
			}
			p.stack = append(p.stack, item)
			continue
		}
		sp := 1
		for l.text[sp] == ' ' {
			sp++
		}
		col := indent + sp
		rest := l.text[sp:]
		if isEntry(rest) {
			return nil, false // "- - x"
		}
		if _, _, isKey := splitKey(rest); isKey {
			// "- key: value": a mapping whose keys sit at col.
			p.lines[p.i] = fastLine{indent: col, text: rest, num: l.num}
			item, ok := p.mapping(col)
			if !ok {
				return nil, false
			}
			p.stack = append(p.stack, item)
			continue
		}
		item, ok := p.scalar(rest, l.num, col)
		if !ok {
			return nil, false
		}
		p.stack = append(p.stack, item)
		p.i++
		if p.i < len(p.lines) && p.lines[p.i].indent > indent {
			return nil, false // a continued scalar
		}
	}
	if p.i < len(p.lines) && p.lines[p.i].indent > indent {
		return nil, false
	}
	p.content(n, start)
	return n, true
}

func (p *fastParser) mapping(indent int) (*yaml.Node, bool) {
	first := p.lines[p.i]
	n := p.node()
	n.Kind, n.Tag, n.Line, n.Column = yaml.MappingNode, "!!map", first.num, indent+1
	start := len(p.stack)
	for p.i < len(p.lines) && p.lines[p.i].indent == indent {
		l := p.lines[p.i]
		key, rest, ok := splitKey(l.text)
		if !ok {
			return nil, false
		}
		k, ok := p.scalar(key, l.num, indent)
		if !ok {
			return nil, false
		}
		p.stack = append(p.stack, k)
		p.i++
		if rest != "" {
			v, ok := p.scalar(rest, l.num, indent+len(l.text)-len(rest))
			if !ok {
				return nil, false
			}
			p.stack = append(p.stack, v)
			if p.i < len(p.lines) && p.lines[p.i].indent > indent {
				return nil, false // a continued scalar
			}
			continue
		}
		var v *yaml.Node
		switch {
		case p.i < len(p.lines) && p.lines[p.i].indent > indent:
			v, ok = p.block(p.lines[p.i].indent)
		case p.i < len(p.lines) && p.lines[p.i].indent == indent && isEntry(p.lines[p.i].text):
			v, ok = p.sequence(indent)
		default:
			return nil, false // an empty value: go-yaml places it
		}
		if !ok {
			return nil, false
		}
		p.stack = append(p.stack, v)
	}
	if p.i < len(p.lines) && p.lines[p.i].indent > indent {
		return nil, false
	}
	p.content(n, start)
	return n, true
}

// splitKey splits "key: value" or "key:" where key is a simple word.
func splitKey(text string) (key, rest string, ok bool) {
	j := 0
	for j < len(text) && j <= 256 {
		c := text[j]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case (c >= '0' && c <= '9' || c == '-' || c == '.' || c == '/') && j > 0:
		default:
			goto done
		}
		j++
	}
done:
	if j == 0 || j >= len(text) || text[j] != ':' {
		return "", "", false
	}
	rest = text[j+1:]
	if rest != "" && rest[0] != ' ' {
		return "", "", false
	}
	for rest != "" && rest[0] == ' ' {
		rest = rest[1:]
	}
	return text[:j], rest, true
}

// scalar builds a plain scalar at 0-based column col, or an empty flow
// mapping or list ({} and [], common in collector configs).
func (p *fastParser) scalar(v string, line, col int) (*yaml.Node, bool) {
	if v == "{}" || v == "[]" {
		n := p.node()
		n.Kind, n.Tag, n.Style, n.Line, n.Column = yaml.MappingNode, "!!map", yaml.FlowStyle, line, col+1
		if v == "[]" {
			n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
		}
		return n, true
	}
	switch v[0] {
	case '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return nil, false
	}
	if v[len(v)-1] == ':' {
		return nil, false
	}
	for j := 0; j+1 < len(v); j++ {
		if v[j] == ':' && v[j+1] == ' ' {
			return nil, false
		}
	}
	n := p.node()
	n.Kind, n.Tag, n.Value, n.Line, n.Column = yaml.ScalarNode, p.plainTag(v), v, line, col+1
	return n, true
}

// plainTag resolves a plain scalar's tag as go-yaml does, without its cost
// for the common cases.
func (p *fastParser) plainTag(v string) string {
	switch c := v[0]; {
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_':
		// go-yaml resolves a word only through its table of booleans
		// and nulls (YAML 1.2: yes, no, on and off are strings).
		switch v {
		case "true", "True", "TRUE", "false", "False", "FALSE":
			return "!!bool"
		case "null", "Null", "NULL":
			return "!!null"
		}
		return "!!str"
	case c >= '0' && c <= '9':
		if c != '0' && len(v) <= 18 && digits(v) {
			return "!!int"
		}
		// An int, float or timestamp is spelled with these bytes only
		// (digits, base prefixes and hex digits, separators, signs,
		// exponents, date and time punctuation); anything else is a string.
		for i := 1; i < len(v); i++ {
			switch b := v[i]; {
			case b >= '0' && b <= '9', b >= 'a' && b <= 'f', b >= 'A' && b <= 'F':
			case b == 'x', b == 'X', b == 'o', b == 'O', b == '_', b == '+', b == '-', b == '.', b == ':',
				b == 't', b == 'T', b == 'z', b == 'Z', b == ' ':
			default:
				return "!!str"
			}
		}
	}
	p.tmp = yaml.Node{Kind: yaml.ScalarNode, Value: v}
	return p.tmp.ShortTag()
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
