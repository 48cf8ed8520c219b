package vars

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Engine renders templates and documents. The zero value uses the default
// provider "env".
type Engine struct {
	// DefaultProvider is prefixed to variables written without a dot.
	DefaultProvider string
}

func (e Engine) defaultProvider() string {
	if e.DefaultProvider == "" {
		return DefaultProvider
	}
	return e.DefaultProvider
}

// Validate checks the engine settings.
func (e Engine) Validate() error {
	p := e.defaultProvider()
	for _, r := range p {
		if !isNameRune(r) {
			return &RenderError{Path: "default provider", Msg: fmt.Sprintf("%q is not a valid provider name", p)}
		}
	}
	return nil
}

// Parse parses src with the engine's default provider.
func (e Engine) Parse(src string) (*Template, error) { return ParseWith(src, e.defaultProvider()) }

// RenderValue parses src and evaluates it against the context set. ok is
// false when src is a whole-value reference to null.
func (e Engine) RenderValue(src string, data *Data) (v any, ok bool, err error) {
	t, err := e.Parse(src)
	if err != nil {
		return nil, false, err
	}
	return t.Render(orEmpty(data).ContextSet())
}

// Dropped reports an input render that produced nothing: Set is "context" or
// "<provider>-<mappingid>"; Reference is the missing reference as written;
// Reason explains drops that are not a missing reference.
type Dropped struct {
	Input     int    `json:"input"`
	Set       string `json:"set"`
	Reference string `json:"reference,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// Result is a rendered document.
type Result struct {
	// Document is the rendered document. It may share unsubstituted subtrees
	// between inputs: treat it as read-only.
	Document map[string]any
	// Dropped lists every input render dropped, in rendering order.
	Dropped []Dropped
	// Warnings are problems that did not stop the render (non-map inputs).
	Warnings []string
}

// compiled input
type input struct {
	index int   // position in the original inputs list
	root  *node // the input map
	// dynamic is the one dynamic provider the input references, "" for none.
	dynamic string
	// conflict names the dynamic providers when there are several.
	conflict []string
}

// RenderDocument renders doc (decoded YAML or JSON) against data following
// the dynamic-input rules: every input is rendered for the context set and
// for each mapping of the one dynamic provider it references; missing
// references drop that render (reported in Dropped); identical renders are
// kept once; dynamic copies get suffixed ids and the mapping's processors.
// outputs render against the context set only. Errors are *ParseError,
// *MissingError (outputs only) or *RenderError.
func (e Engine) RenderDocument(doc any, data *Data) (*Result, error) {
	return e.renderDocument(doc, nil, data)
}

// RenderYAML decodes a YAML document and renders it like RenderDocument,
// evaluating map keys in the order they are written, so the first missing
// reference or parse error reported is the first in the text. name labels
// errors (a file name). Unparsable YAML is a *RenderError.
func (e Engine) RenderYAML(name string, src []byte, data *Data) (*Result, error) {
	doc, order, err := decodeYAML(src)
	if err != nil {
		return nil, &RenderError{Path: name, Msg: "invalid YAML: " + err.Error()}
	}
	return e.renderDocument(doc, order, data)
}

func (e Engine) renderDocument(doc any, order KeyOrder, data *Data) (*Result, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	data = orEmpty(data)
	nd, err := Normalize(doc)
	if err != nil {
		return nil, err
	}
	top, ok := nd.(map[string]any)
	if !ok {
		return nil, &RenderError{Msg: fmt.Sprintf("document must be a map, got %s", typeName(nd))}
	}
	res := &Result{Dropped: []Dropped{}}

	rawInputs, hasInputs := top["inputs"]
	var items []any
	if hasInputs {
		items, ok = rawInputs.([]any)
		if !ok {
			return nil, &RenderError{Path: "inputs", Msg: fmt.Sprintf("must be a list, got %s", typeName(rawInputs))}
		}
	}
	rawOutputs, hasOutputs := top["outputs"]
	if hasOutputs {
		if _, ok := rawOutputs.(map[string]any); !ok {
			return nil, &RenderError{Path: "outputs", Msg: fmt.Sprintf("must be a map, got %s", typeName(rawOutputs))}
		}
	}

	// Parse everything before evaluating anything.
	c := compiler{def: e.defaultProvider(), order: order}
	var inputs []input
	for i, it := range items {
		if _, ok := it.(map[string]any); !ok {
			res.Warnings = append(res.Warnings, fmt.Sprintf("inputs[%d]: dropped: an input must be a map, got %s", i, typeName(it)))
			continue
		}
		c.providers = map[string]bool{}
		n, err := c.compile(it, indexPath(keyPath("", "inputs"), i))
		if err != nil {
			return nil, err
		}
		in := input{index: i, root: n}
		for p := range c.providers {
			if data.isDynamic(p) {
				in.conflict = append(in.conflict, p)
			}
		}
		sort.Strings(in.conflict)
		if len(in.conflict) == 1 {
			in.dynamic = in.conflict[0]
			in.conflict = nil
		}
		inputs = append(inputs, in)
	}
	var outNode *node
	if hasOutputs {
		if outNode, err = c.compile(rawOutputs, keyPath("", "outputs")); err != nil {
			return nil, err
		}
	}

	out := make(map[string]any, len(top))
	for k, v := range top {
		out[k] = v
	}
	if hasOutputs {
		st := evalState{set: data.ContextSet()}
		v, _, err := st.renderNode(outNode)
		if err != nil {
			var me *MissingError
			if errors.As(err, &me) {
				me.Path = "outputs" + dotPrefix(me.Path)
			}
			return nil, err
		}
		out["outputs"] = v
	}

	var kept []any
	expected := len(inputs)
	for _, in := range inputs {
		expected += len(data.byProvider[in.dynamic])
	}
	seen := newDedup(expected)
	ctx := data.ContextSet()
	for _, in := range inputs {
		if len(in.conflict) > 0 {
			res.Dropped = append(res.Dropped, Dropped{
				Input:  in.index,
				Set:    ContextSet,
				Reason: "input references more than one dynamic provider (" + strings.Join(in.conflict, ", ") + ")",
			})
			continue
		}
		st := evalState{set: ctx}
		v, _, err := st.renderNode(in.root)
		if err != nil {
			res.Dropped = append(res.Dropped, missingDrop(in.index, ctx, err))
			continue
		}
		if seen.add(v) {
			kept = append(kept, v)
		}
	}
	for mi := range data.mappings {
		m := &data.mappings[mi]
		set := data.MappingSet(mi)
		for _, in := range inputs {
			if in.dynamic != m.Provider {
				continue
			}
			st := evalState{set: set}
			v, _, err := st.renderNode(in.root)
			if err != nil {
				res.Dropped = append(res.Dropped, missingDrop(in.index, set, err))
				continue
			}
			if !seen.add(v) {
				continue
			}
			cp, err := dynamicCopy(v.(map[string]any), m, st.used)
			if err != nil {
				return nil, &RenderError{Path: fmt.Sprintf("inputs[%d] for %s", in.index, m.SetName()), Msg: err.Error()}
			}
			kept = append(kept, cp)
		}
	}
	if hasInputs {
		if kept == nil {
			kept = []any{}
		}
		out["inputs"] = kept
	}
	res.Document = out
	return res, nil
}

func missingDrop(index int, set Set, err error) Dropped {
	d := Dropped{Input: index, Set: set.Name()}
	var me *MissingError
	if errors.As(err, &me) {
		d.Reference = me.Reference
	} else {
		d.Reason = err.Error()
	}
	return d
}

// dynamicCopy returns v with the id suffixed and the mapping's processors
// prepended. v itself is left as rendered: the de-duplication table holds it.
func dynamicCopy(rendered map[string]any, m *Mapping, used bool) (map[string]any, error) {
	v := make(map[string]any, len(rendered)+3) // room for id, original_id, processors
	for k, x := range rendered {
		v[k] = x
	}
	id, hasID := v["id"]
	if hasID && id != nil {
		var s string
		switch x := id.(type) {
		case string:
			s = x
		case int64, uint64, float64:
			s = scalarText(x)
		default:
			return nil, fmt.Errorf("id must be a string or a number, got %s", typeName(id))
		}
		v["original_id"] = id
		v["id"] = s + "-" + m.Provider + "-" + m.ID
	} else {
		v["id"] = m.Provider + "-" + m.ID
	}
	if used && len(m.Processors) > 0 {
		switch p := v["processors"].(type) {
		case nil:
			if _, present := v["processors"]; !present {
				v["processors"] = slices.Clone(m.Processors)
			}
		case []any:
			v["processors"] = slices.Concat(m.Processors, p)
		}
	}
	return v, nil
}

type nodeKind uint8

const (
	nodeLit nodeKind = iota
	nodeTmpl
	nodeMap
	nodeList
)

// node is a parsed document subtree, so a document is parsed once and
// evaluated once per vars set.
type node struct {
	kind  nodeKind
	lit   any       // nodeLit: the value, shared between renders
	tmpl  *Template // nodeTmpl
	keys  []string  // nodeMap, in document order (else sorted): the first missing reference is deterministic
	vals  []*node
	items []*node // nodeList
}

type compiler struct {
	def       string
	order     KeyOrder
	providers map[string]bool // providers referenced by the current input
}

func (c *compiler) compile(v any, path string) (*node, error) {
	switch x := v.(type) {
	case string:
		t, err := ParseWith(x, c.def)
		if err != nil {
			return nil, err
		}
		if !t.HasReferences() {
			// Escapes and collector references still change the text.
			return &node{kind: nodeLit, lit: textOf(t)}, nil
		}
		for _, r := range t.References() {
			for _, a := range r.Alts {
				if !a.Const && c.providers != nil {
					c.providers[a.Path[0]] = true
				}
			}
		}
		return &node{kind: nodeTmpl, tmpl: t}, nil
	case map[string]any:
		n := &node{kind: nodeMap, keys: c.order.orderedKeys(path, x)}
		static := true
		n.vals = make([]*node, len(n.keys))
		for i, k := range n.keys {
			cn, err := c.compile(x[k], keyPath(path, k))
			if err != nil {
				return nil, err
			}
			n.vals[i] = cn
			static = static && cn.kind == nodeLit
		}
		if static {
			return &node{kind: nodeLit, lit: litValue(n)}, nil
		}
		return n, nil
	case []any:
		n := &node{kind: nodeList, items: make([]*node, len(x))}
		static := true
		for i, e := range x {
			cn, err := c.compile(e, indexPath(path, i))
			if err != nil {
				return nil, err
			}
			n.items[i] = cn
			static = static && cn.kind == nodeLit
		}
		if static {
			return &node{kind: nodeLit, lit: litValue(n)}, nil
		}
		return n, nil
	default:
		return &node{kind: nodeLit, lit: x}, nil
	}
}

// textOf renders a template without references (only text parts).
func textOf(t *Template) string {
	if len(t.parts) == 1 {
		return t.parts[0].text
	}
	var b strings.Builder
	for _, p := range t.parts {
		b.WriteString(p.text)
	}
	return b.String()
}

// litValue rebuilds the value of an all-literal subtree.
func litValue(n *node) any {
	switch n.kind {
	case nodeMap:
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			m[k] = n.vals[i].lit
		}
		return m
	case nodeList:
		l := make([]any, len(n.items))
		for i, it := range n.items {
			l[i] = it.lit
		}
		return l
	default:
		return n.lit
	}
}

// renderNode evaluates a compiled subtree. Map keys and list elements whose
// whole-value reference resolves to null are removed.
func (st *evalState) renderNode(n *node) (any, bool, error) {
	switch n.kind {
	case nodeLit:
		return n.lit, true, nil
	case nodeTmpl:
		return st.render(n.tmpl)
	case nodeMap:
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			v, ok, err := st.renderNode(n.vals[i])
			if err != nil {
				var me *MissingError
				if errors.As(err, &me) {
					me.Path = k + dotPrefix(me.Path)
				}
				return nil, false, err
			}
			if ok {
				m[k] = v
			}
		}
		return m, true, nil
	case nodeList:
		l := make([]any, 0, len(n.items))
		for i, it := range n.items {
			v, ok, err := st.renderNode(it)
			if err != nil {
				var me *MissingError
				if errors.As(err, &me) {
					me.Path = "[" + strconv.Itoa(i) + "]" + dotPrefix(me.Path)
				}
				return nil, false, err
			}
			if ok {
				l = append(l, v)
			}
		}
		return l, true, nil
	}
	return nil, false, fmt.Errorf("internal: unknown node kind %d", n.kind)
}

func dotPrefix(p string) string {
	if p == "" || strings.HasPrefix(p, "[") {
		return p
	}
	return "." + p
}

// RenderTree parses every string in v (decoded YAML or JSON) and renders it
// against set, as one input is rendered: map keys and non-string scalars are
// kept, whole-value references keep their type, and a null from one removes
// the key or element holding it. used reports whether a variable of the
// set's mapping provider yielded. Errors are *ParseError (before anything is
// evaluated), *MissingError (with the path of the string) or *RenderError.
func (e Engine) RenderTree(v any, set Set) (out any, used bool, err error) {
	if err := e.Validate(); err != nil {
		return nil, false, err
	}
	n, err := Normalize(v)
	if err != nil {
		return nil, false, err
	}
	c := compiler{def: e.defaultProvider()}
	root, err := c.compile(n, "")
	if err != nil {
		return nil, false, err
	}
	st := evalState{set: set}
	out, ok, err := st.renderNode(root)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		return nil, st.used, nil
	}
	return out, st.used, nil
}
