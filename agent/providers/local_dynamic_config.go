package providers

import (
	"errors"
	"fmt"

	"github.com/myriarch/myriarch/internal/providerwire"
	"github.com/myriarch/myriarch/internal/vars"
	"github.com/myriarch/myriarch/internal/yamlstrict"
)

// LocalDynamicConfig lists static mappings, in one of two shapes (not
// both): Vars as the providers specification writes it, each element one mapping's variables
// (`vars: [{item: key1}, {item: key2}]` gives ${local_dynamic.item}); or
// Items, each a mapping's variables and the processors it carries.
type LocalDynamicConfig struct {
	Enabled *bool              `yaml:"enabled"`
	Vars    []map[string]any   `yaml:"vars"`
	Items   []LocalDynamicItem `yaml:"items"`
}

// LocalDynamicItem is one mapping of the local_dynamic provider.
type LocalDynamicItem struct {
	Vars       map[string]any `yaml:"vars"`
	Processors []any          `yaml:"processors"`
}

// validate reports every problem of providers.local_dynamic, each with its
// path.
func (c *LocalDynamicConfig) validate() []error {
	var errs []error
	if c.Vars != nil && c.Items != nil {
		errs = append(errs, &yamlstrict.FieldError{Path: "providers.local_dynamic.vars", Err: errors.New(
			"set only one of providers.local_dynamic.vars and providers.local_dynamic.items (items carry processors, vars only variables)")})
	}
	for i, v := range c.Vars {
		if _, err := vars.Normalize(v); err != nil {
			errs = append(errs, fmt.Errorf("providers.local_dynamic.vars[%d]: %w", i, err))
		}
	}
	for i, it := range c.Items {
		where := fmt.Sprintf("providers.local_dynamic.items[%d]", i)
		if _, err := vars.Normalize(it.Vars); err != nil {
			errs = append(errs, fmt.Errorf("%s.vars: %w", where, err))
		}
		procs, err := vars.Normalize(it.Processors)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.processors: %w", where, err))
			continue
		}
		list, _ := procs.([]any)
		for j, p := range list {
			if err := providerwire.CheckProcessor(p); err != nil {
				errs = append(errs, fmt.Errorf("%s.processors[%d]: %w", where, j, err))
			}
		}
	}
	return errs
}

// items is the configured mappings, normalized (validate passed): Vars
// when given, else Items.
func (c *LocalDynamicConfig) items() []LocalDynamicItem {
	if c.Vars != nil {
		items := make([]LocalDynamicItem, len(c.Vars))
		for i, v := range c.Vars {
			n, _ := vars.Normalize(v)
			items[i].Vars, _ = n.(map[string]any)
		}
		return items
	}
	items := make([]LocalDynamicItem, len(c.Items))
	for i, it := range c.Items {
		v, _ := vars.Normalize(it.Vars)
		p, _ := vars.Normalize(it.Processors)
		items[i].Vars, _ = v.(map[string]any)
		items[i].Processors, _ = p.([]any)
	}
	return items
}
