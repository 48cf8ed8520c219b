package configs

import (
	"bytes"
	"slices"
	"strconv"

	yaml "go.yaml.in/yaml/v3"
)

// What a collector configuration defines: "<section>/<id>" for its
// components and "pipelines/<name>" for its pipelines, sorted. Read by a
// line scanner, not a YAML parser: a collector reports its effective
// configuration (up to MaxEffective bytes) in block style, and building a
// YAML tree of a few MiB costs hundreds of MiB, where the scanner costs
// the list it returns. A document the scanner does not read with certainty
// (flow style where it looks, tabs, anchors, several documents) is parsed
// as YAML when it is at most maxParsed bytes; a larger one is not read.

// maxParsed bounds a document definedIDs parses as YAML.
const maxParsed = 256 << 10

// sections are the top-level keys whose keys are component ids.
var sections = []string{"receivers", "processors", "exporters", "connectors", "extensions"}

// definedIDs lists what body defines; ok is false when it cannot be read.
func definedIDs(body []byte) (ids []string, ok bool) {
	if ids, ok := scanDefinedIDs(body); ok {
		return ids, true
	}
	if len(body) > maxParsed {
		return nil, false
	}
	return parseDefinedIDs(body)
}

// parseDefinedIDs reads what body defines with a YAML parser.
func parseDefinedIDs(body []byte) (ids []string, ok bool) {
	var doc struct {
		Receivers  map[string]yaml.Node `yaml:"receivers"`
		Processors map[string]yaml.Node `yaml:"processors"`
		Exporters  map[string]yaml.Node `yaml:"exporters"`
		Connectors map[string]yaml.Node `yaml:"connectors"`
		Extensions map[string]yaml.Node `yaml:"extensions"`
		Service    struct {
			Pipelines map[string]yaml.Node `yaml:"pipelines"`
		} `yaml:"service"`
	}
	if yaml.Unmarshal(body, &doc) != nil {
		return nil, false
	}
	for _, sec := range []struct {
		name string
		m    map[string]yaml.Node
	}{{"receivers", doc.Receivers}, {"processors", doc.Processors}, {"exporters", doc.Exporters},
		{"connectors", doc.Connectors}, {"extensions", doc.Extensions}, {"pipelines", doc.Service.Pipelines}} {
		for id := range sec.m {
			ids = append(ids, sec.name+"/"+id)
		}
	}
	slices.Sort(ids)
	return ids, true
}

// scanDefinedIDs reads what a block-style body defines line by line. It
// tracks the keys of the lines it reads by their indentation; a line more
// indented than a key belongs to that key's value. ok is false for what it
// cannot read with certainty.
func scanDefinedIDs(body []byte) (ids []string, ok bool) {
	var path []openKey // the keys enclosing the current line, outermost first
	skipDeeper := -1   // inside a block scalar: lines indented more than this are its text
	rootIndent := 0    // of the top-level keys
	seen := map[string]bool{}
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		indent := 0
		for indent < len(line) && line[indent] == ' ' {
			indent++
		}
		rest := line[indent:]
		if len(rest) == 0 || rest[0] == '#' {
			continue // blank or a comment (block scalars keep their blank lines; they hold no key)
		}
		if skipDeeper >= 0 {
			if indent > skipDeeper {
				continue
			}
			skipDeeper = -1
		}
		switch {
		case rest[0] == '\t':
			return nil, false
		case indent == 0 && (bytes.HasPrefix(rest, []byte("---")) || bytes.HasPrefix(rest, []byte("..."))):
			if len(path) > 0 || len(ids) > 0 {
				return nil, false // a second document
			}
			continue
		case rest[0] == '%' || rest[0] == '?' || rest[0] == '&' || rest[0] == '*' || rest[0] == '!':
			return nil, false // directives, complex keys, anchors, aliases, tags
		}
		for len(path) > 0 && path[len(path)-1].indent >= indent {
			path = path[:len(path)-1]
		}
		if rest[0] == '-' && (len(rest) == 1 || rest[1] == ' ') {
			// A sequence item: where ids are read, a sequence is not a
			// configuration the collector accepts; deeper, it holds none.
			if len(path) == 0 || tracked(path) {
				return nil, false
			}
			if bytes.IndexByte(rest, '|') >= 0 || bytes.IndexByte(rest, '>') >= 0 {
				skipDeeper = indent // conservatively: "- key: |" may open a block scalar
			}
			continue
		}
		// Siblings share their indentation: a line less indented than
		// its siblings but more than its parent is not block YAML the
		// scanner reads.
		if len(path) == 0 && indent != rootIndent {
			return nil, false
		}
		if len(path) > 0 {
			top := &path[len(path)-1]
			if top.childIndent < 0 {
				top.childIndent = indent
			} else if indent != top.childIndent {
				return nil, false
			}
		}
		key, value, isKey := splitKey(rest)
		if !isKey {
			if tracked(path) || len(path) == 0 {
				return nil, false // a scalar where keys were expected
			}
			continue // a continuation line of a multi-line scalar, deeper than any id
		}
		value = stripComment(value)
		if len(value) > 0 && (value[0] == '|' || value[0] == '>') {
			skipDeeper = indent
		}
		if len(value) > 0 && (value[0] == '&' || value[0] == '*' || value[0] == '!') {
			return nil, false
		}
		switch depth := len(path); {
		case depth == 0:
			if isSection(key) && !emptyValue(value) {
				return nil, false
			}
		case depth == 1 && isSection(path[0].key):
			id := path[0].key + "/" + key
			if seen[id] {
				return nil, false // a duplicate key: the parser would refuse it
			}
			seen[id] = true
			ids = append(ids, id)
		case depth == 1 && path[0].key == "service" && key == "pipelines":
			if !emptyValue(value) {
				return nil, false
			}
		case depth == 2 && path[0].key == "service" && path[1].key == "pipelines":
			id := "pipelines/" + key
			if seen[id] {
				return nil, false
			}
			seen[id] = true
			ids = append(ids, id)
		}
		path = append(path, openKey{indent: indent, key: key, childIndent: -1})
	}
	slices.Sort(ids)
	return ids, true
}

// openKey is a key whose value the lines below it, more indented, are.
type openKey struct {
	indent      int
	key         string
	childIndent int // of the lines under it; -1 until one is read
}

// tracked reports whether the lines under path are ids or sections:
// where only keys belong.
func tracked(path []openKey) bool {
	switch len(path) {
	case 1:
		return isSection(path[0].key) || path[0].key == "service"
	case 2:
		return path[0].key == "service" && path[1].key == "pipelines"
	}
	return false
}

// isSection reports whether a top-level key holds component ids.
func isSection(key string) bool { return slices.Contains(sections, key) }

// emptyValue reports whether a section's inline value leaves it a block
// mapping below (nothing) or empty ({} or null).
func emptyValue(v []byte) bool {
	switch string(v) {
	case "", "{}", "~", "null", "Null", "NULL":
		return true
	}
	return false
}

// splitKey reads "key: value" (value may be empty) with a plain, single-
// or double-quoted key.
func splitKey(s []byte) (key string, value []byte, ok bool) {
	switch s[0] {
	case '"':
		end := 1
		for end < len(s) && s[end] != '"' {
			if s[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(s) {
			return "", nil, false
		}
		k, err := strconv.Unquote(string(s[:end+1]))
		if err != nil {
			return "", nil, false
		}
		return afterColon(k, s[end+1:])
	case '\'':
		var b []byte
		i := 1
		for ; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					b = append(b, '\'')
					i++
					continue
				}
				break
			}
			b = append(b, s[i])
		}
		if i >= len(s) {
			return "", nil, false
		}
		return afterColon(string(b), s[i+1:])
	case '{', '[', '|', '>', '@', '`':
		return "", nil, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ') {
			k := string(bytes.TrimRight(s[:i], " "))
			if k == "" || bytes.Contains(s[:i], []byte(" #")) {
				return "", nil, false
			}
			return k, bytes.TrimLeft(s[i+1:], " "), true
		}
	}
	return "", nil, false
}

func afterColon(key string, s []byte) (string, []byte, bool) {
	s = bytes.TrimLeft(s, " ")
	if len(s) == 0 || s[0] != ':' || (len(s) > 1 && s[1] != ' ') {
		return "", nil, false
	}
	return key, bytes.TrimLeft(s[1:], " "), true
}

// stripComment drops a trailing comment of a value.
func stripComment(v []byte) []byte {
	if len(v) > 0 && v[0] == '#' {
		return nil
	}
	if i := bytes.Index(v, []byte(" #")); i >= 0 && v[0] != '"' && v[0] != '\'' {
		v = v[:i]
	}
	return bytes.TrimRight(v, " ")
}
