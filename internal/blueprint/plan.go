package blueprint

import (
	"bytes"
	"fmt"

	yaml "go.yaml.in/yaml/v3"
)

// Plan is a Blueprint resolved into what it renders: the placed
// Components and the pipelines that use them. [Plan.YAML] writes it as
// collector configuration. A Plan may be changed before it is written (the
// server substitutes variables and drops receivers); Config nodes are
// shared with the Estate, so replace them rather than change them.
type Plan struct {
	Blueprint  string
	Components []Placed   // distinct rendered ids, first appearance first
	Pipelines  []Pipeline // the signal lanes that place anything, in lane order
	Extensions []string   // rendered ids listed in service.extensions
}

// Placed is one Component as it renders.
type Placed struct {
	ID    string // rendered id, <type>/<name>
	Class Class
	Type  string
	// Source names the Component in messages: <team>/<name>@<version> for
	// a shared Component, the bare name for a local one.
	Source string
	// Config is the authored configuration (a mapping node); read-only.
	Config *yaml.Node
}

// Pipeline is one service pipeline: a signal lane, or a pipeline a caller
// added (its Name is then <signal>/<suffix>).
type Pipeline struct {
	Name       string
	Receivers  []string
	Processors []string
	Exporters  []string
}

// YAML writes the plan as an OpenTelemetry Collector configuration.
func (p *Plan) YAML() []byte {
	out, _ := p.YAMLWithin(0)
	return out
}

// TooLargeError is a document that would be larger than the bound it was
// written within.
type TooLargeError struct{ Max int }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the document is over the %d-byte limit (writing stopped there)", e.Max)
}

// YAMLWithin is YAML that stops writing once the document is max bytes
// (0: no bound) and returns a *TooLargeError instead: a document is never
// built much past its bound, however large it would have been.
func (p *Plan) YAMLWithin(max int) (out []byte, err error) {
	// Write into a pooled buffer and return an exact-size copy: the
	// document's size is not known up front, and growing a fresh buffer
	// for every render cost more than the copy.
	buf := renderBufs.Get().(*emitBuf)
	buf.max = max
	defer func() {
		if r := recover(); r != nil {
			if r != errOverMax {
				panic(r)
			}
			out, err = nil, &TooLargeError{Max: max}
		}
		if buf.Cap() <= 1<<20 {
			buf.Reset()
			renderBufs.Put(buf)
		}
	}()
	for _, sec := range sections {
		writeKey(buf, 0, sec)
		n := 0
		for _, c := range p.Components {
			if sectionOf[c.Class] != sec {
				continue
			}
			if n == 0 {
				buf.WriteByte('\n')
			}
			n++
			writeKey(buf, 2, c.ID)
			writeValue(buf, c.Config, 2)
		}
		if n == 0 {
			buf.WriteString(" {}\n")
		}
	}
	buf.WriteString("service:\n")
	writeKey(buf, 2, "extensions")
	buf.WriteByte(' ')
	writeFlowIDs(buf, p.Extensions)
	writeKey(buf, 2, "pipelines")
	for i, pl := range p.Pipelines {
		if i == 0 {
			buf.WriteByte('\n')
		}
		writeKey(buf, 4, pl.Name)
		buf.WriteByte('\n')
		for _, part := range [...]struct {
			key string
			ids []string
		}{{"receivers", pl.Receivers}, {"processors", pl.Processors}, {"exporters", pl.Exporters}} {
			writeKey(buf, 6, part.key)
			buf.WriteByte(' ')
			writeFlowIDs(buf, part.ids)
		}
	}
	if len(p.Pipelines) == 0 {
		buf.WriteString(" {}\n")
	}
	if max > 0 && buf.Len() > max {
		return nil, &TooLargeError{Max: max}
	}
	return bytes.Clone(buf.Bytes()), nil
}
