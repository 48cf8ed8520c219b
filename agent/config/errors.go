package config

import (
	"fmt"
	"strings"
)

// FieldError is one problem in the configuration, located by its YAML path
// ("server.tls.ca_file", "supervisor.command[0]") and, when the key is
// present in the file, its line.
type FieldError struct {
	Path string
	Line int // 0 when the key is absent from the file
	Err  error
}

func (e *FieldError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s (line %d): %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

// Error is what Load returns for a file with problems: every problem found,
// in file order as far as possible.
type Error struct {
	File     string
	Problems []error // mostly *FieldError
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "config %s: %d problem(s):", e.File, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap exposes every problem to errors.Is / errors.As.
func (e *Error) Unwrap() []error { return e.Problems }

func fieldErr(path string, format string, args ...any) *FieldError {
	return &FieldError{Path: path, Err: fmt.Errorf(format, args...)}
}
