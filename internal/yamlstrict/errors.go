package yamlstrict

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// FieldError is one problem in a YAML file, located by its YAML path
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

// Error is every problem found in one file, in file order as far as possible.
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

// Flatten turns an errors.Join tree into its leaves.
func Flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// SortByLine puts problems in file order, which reads best; problems
// without a line (absent keys, whole-file problems) go last, in the order
// they were found.
func SortByLine(problems []error) {
	slices.SortStableFunc(problems, func(a, b error) int { return cmp.Compare(lineKey(a), lineKey(b)) })
}

func lineKey(e error) int {
	var fe *FieldError
	if errors.As(e, &fe) && fe.Line > 0 {
		return fe.Line
	}
	return math.MaxInt
}
