package config

import (
	"fmt"

	"github.com/myriarch/myriarch/internal/yamlstrict"
)

// FieldError is one problem in the configuration, located by its YAML path
// ("server.tls.ca_file", "supervisor.command[0]") and, when the key is
// present in the file, its line.
type FieldError = yamlstrict.FieldError

// Error is what Load returns for a file with problems: every problem found,
// in file order as far as possible.
type Error = yamlstrict.Error

func fieldErr(path string, format string, args ...any) *FieldError {
	return &FieldError{Path: path, Err: fmt.Errorf(format, args...)}
}
