package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"

	"github.com/myriarch/myriarch/internal/yamlstrict"
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
	root, err := yamlstrict.Parse(data)
	if err != nil {
		return cfg, []error{err}
	}
	d := yamlstrict.NewDecoder()
	d.Decode(root, reflect.ValueOf(cfg).Elem(), "")
	problems := d.Problems()
	for _, e := range yamlstrict.Flatten(cfg.Validate()) {
		var fe *FieldError
		if errors.As(e, &fe) {
			if d.Failed(fe.Path) {
				continue // already reported as undecodable
			}
			if fe.Line == 0 {
				fe.Line = d.Line(fe.Path)
			}
		}
		problems = append(problems, e)
	}
	yamlstrict.SortByLine(problems)
	return cfg, problems
}
