package vars

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Kind classifies an engine error so front ends can report it without
// matching message text.
type Kind string

// The error kinds the engine reports.
const (
	KindParse   Kind = "parse"   // the template is not well-formed
	KindMissing Kind = "missing" // a reference yields no value
	KindRender  Kind = "render"  // the document or the data cannot be rendered
)

// ParseError is a malformed template. Pos is the byte offset (0-based) of the
// offending character in Template; Char is that character, or "" at the end
// of the input.
type ParseError struct {
	Template string
	Pos      int
	Char     string
	Msg      string
}

func (e *ParseError) Error() string {
	at := "end of input"
	if e.Char != "" {
		if r, size := utf8.DecodeRuneInString(e.Char); size == len(e.Char) && r != utf8.RuneError {
			at = fmt.Sprintf("%q", r)
		} else {
			at = fmt.Sprintf("%q", e.Char)
		}
	}
	return fmt.Sprintf("parse error at byte %d (%s): %s in %q", e.Pos, at, e.Msg, e.Template)
}

// MissingError is a reference none of whose alternatives yields a value.
// Reference is the reference exactly as written, e.g. "${ docker.paths.log }".
type MissingError struct {
	Reference string
	// Path locates the string holding the reference inside a document
	// ("outputs.default.endpoint"); empty when rendering a single value.
	Path string
}

func (e *MissingError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("missing reference %s at %s: no alternative yields a value", e.Reference, e.Path)
	}
	return fmt.Sprintf("missing reference %s: no alternative yields a value", e.Reference)
}

// RenderError is a document or data set that cannot be rendered (wrong
// shapes, bad ids, bad mappings). Path names where, when known.
type RenderError struct {
	Path string
	Msg  string
}

func (e *RenderError) Error() string {
	if e.Path == "" {
		return "render: " + e.Msg
	}
	return fmt.Sprintf("render: %s: %s", e.Path, e.Msg)
}

// KindOf reports the kind of an engine error; errors not produced by the
// engine are KindRender.
func KindOf(err error) Kind {
	var pe *ParseError
	var me *MissingError
	switch {
	case errors.As(err, &pe):
		return KindParse
	case errors.As(err, &me):
		return KindMissing
	default:
		return KindRender
	}
}
