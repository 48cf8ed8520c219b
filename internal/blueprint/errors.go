package blueprint

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// LoadError is one problem that stops the load. File is the path of the
// offending file (or source root); Line is 0 when there is no line to name.
type LoadError struct {
	File    string
	Line    int
	Message string
}

func (e LoadError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Message)
}

// LoadErrors is every problem found by a failed load, sorted by file and
// line. It is the error type [Load] returns.
type LoadErrors []LoadError

func (es LoadErrors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return fmt.Sprintf("blueprint: load failed with %d error(s):\n%s", len(es), strings.Join(parts, "\n"))
}

func (es LoadErrors) sort() {
	slices.SortStableFunc(es, func(a, b LoadError) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
}

// errs accumulates load errors for one file.
type errs struct {
	file string
	list *LoadErrors
}

func (e errs) at(line int, format string, args ...any) {
	*e.list = append(*e.list, LoadError{File: e.file, Line: line, Message: fmt.Sprintf(format, args...)})
}

func joinPath(root, rel string) string {
	return filepath.Join(root, filepath.FromSlash(rel))
}
