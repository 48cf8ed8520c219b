package config

import (
	"errors"
	"os"
	"reflect"

	"github.com/myriarch/myriarch/internal/yamlstrict"
)

// Load reads the YAML file at path over NewDefaultConfig, applies the
// environment's overrides (Environment, see LoadEnv) and validates it.
// Every problem is reported at once in an *Error whose Problems are
// *FieldError values naming the YAML path and line, or the variable.
func Load(path string) (*Config, error) { return LoadEnv(path, os.LookupEnv) }

// Parse decodes YAML over the defaults and validates the result. It returns
// the (possibly partial) config and every problem found.
func Parse(data []byte) (*Config, []error) { return parse(data, &overrides{}) }

// parse is Parse with env applied between decoding and validation.
func parse(data []byte, env *overrides) (*Config, []error) {
	cfg := NewDefaultConfig()
	root, err := yamlstrict.Parse(data)
	if err != nil {
		return cfg, append([]error{err}, env.problems...)
	}
	d := yamlstrict.NewDecoder()
	d.Decode(root, reflect.ValueOf(cfg).Elem(), "")
	env.apply(cfg)
	problems := append(d.Problems(), env.problems...)
	for _, e := range yamlstrict.Flatten(cfg.Validate()) {
		var fe *FieldError
		if errors.As(e, &fe) {
			if d.Failed(fe.Path) && !env.sets(fe.Path) {
				continue // already reported as undecodable
			}
			if fe.Line == 0 {
				fe.Line = d.Line(fe.Path)
			}
			env.attribute(fe)
		}
		problems = append(problems, e)
	}
	yamlstrict.SortByLine(problems)
	return cfg, problems
}
