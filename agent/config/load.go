package config

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads the YAML file at path over NewDefaultConfig and validates it.
// Every problem is reported at once in an *Error whose Problems are
// *FieldError values naming the YAML path and line.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, problems := Parse(data)
	if len(problems) > 0 {
		return nil, &Error{File: path, Problems: problems}
	}
	return cfg, nil
}

// Parse decodes YAML over the defaults and validates the result. It returns
// the (possibly partial) config and every problem found.
func Parse(data []byte) (*Config, []error) {
	cfg := NewDefaultConfig()
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return cfg, []error{fmt.Errorf("invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	d := newDecoder()
	if len(root.Content) > 0 {
		d.decode(&root, reflect.ValueOf(cfg).Elem(), "")
	}
	problems := d.problems
	for _, e := range validationErrors(cfg.Validate()) {
		var fe *FieldError
		if errors.As(e, &fe) {
			if d.failed[fe.Path] {
				continue // already reported as undecodable
			}
			if fe.Line == 0 {
				fe.Line = d.lines[fe.Path]
			}
		}
		problems = append(problems, e)
	}
	// File order reads best; problems about absent keys (line 0) go last.
	slices.SortStableFunc(problems, func(a, b error) int { return cmp.Compare(lineKey(a), lineKey(b)) })
	return cfg, problems
}

func lineKey(e error) int {
	var fe *FieldError
	if errors.As(e, &fe) && fe.Line > 0 {
		return fe.Line
	}
	return math.MaxInt
}

// validationErrors flattens an errors.Join tree into its leaves.
func validationErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, validationErrors(e)...)
		}
		return out
	}
	return []error{err}
}
