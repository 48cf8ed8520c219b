// Package apispec is the admin API's OpenAPI document at run time: loaded
// once from package api, served as JSON, and used to check requests
// before they are served and, in tests, every answer.
package apispec

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"

	"github.com/myriarch/myriarch/api"
)

// Spec is a loaded, checked OpenAPI document. It is safe for concurrent
// use and never changes after Parse.
type Spec struct {
	doc    *openapi3.T
	json   []byte
	routes map[string]*routers.Route // by "METHOD /path", the syntax of the server's route patterns
}

var loaded = sync.OnceValues(func() (*Spec, error) { return Parse(api.OpenAPI) })

// Load returns the document built into this binary (parsed once).
func Load() (*Spec, error) { return loaded() }

// Parse loads an OpenAPI 3.1 document from YAML or JSON and checks it.
func Parse(data []byte) (*Spec, error) {
	l := openapi3.NewLoader()
	doc, err := l.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("openapi: reading the document: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("openapi: the document is OpenAPI %s; want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi: the document is not valid: %w", err)
	}
	if err := checkKeywords(doc); err != nil {
		return nil, err
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: writing the document as JSON: %w", err)
	}
	s := &Spec{doc: doc, json: js, routes: map[string]*routers.Route{}}
	// The checks run kin-openapi's own validator, which reads 3.1's type
	// lists (type: [string, "null"]) and is compiled once: for a 3.1
	// document openapi3filter would compile a JSON Schema 2020-12
	// validator per value checked (0.25 ms for a listing's query, 0.65
	// ms for a small body). The document uses no keyword only 2020-12
	// has (checkKeywords).
	checked := *doc
	checked.OpenAPI = "3.0.3"
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			s.routes[method+" "+path] = &routers.Route{Spec: &checked, Path: path, PathItem: item, Method: method, Operation: op}
		}
	}
	return s, nil
}

// JSON is the document as JSON (GET /api/v1/openapi.json).
func (s *Spec) JSON() []byte { return s.json }

// Routes lists the documented operations as route patterns
// ("GET /api/v1/agents/{uid}"), sorted.
func (s *Spec) Routes() []string {
	out := make([]string, 0, len(s.routes))
	for r := range s.routes {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// Has reports whether the route pattern is documented.
func (s *Spec) Has(pattern string) bool { return s.routes[pattern] != nil }

// route is the documented operation of pattern, with its path values read
// from r (which the server's router matched against pattern).
func (s *Spec) route(r *http.Request, pattern string) (*routers.Route, map[string]string, bool) {
	rt := s.routes[pattern]
	if rt == nil {
		return nil, nil, false
	}
	params := map[string]string{}
	for _, p := range rt.Operation.Parameters {
		if p.Value != nil && p.Value.In == openapi3.ParameterInPath {
			params[p.Value.Name] = r.PathValue(p.Value.Name)
		}
	}
	for _, p := range rt.PathItem.Parameters {
		if p.Value != nil && p.Value.In == openapi3.ParameterInPath {
			params[p.Value.Name] = r.PathValue(p.Value.Name)
		}
	}
	return rt, params, true
}

// Operation is the documented operation of a route pattern, nil when none.
func (s *Spec) Operation(pattern string) *openapi3.Operation {
	if rt := s.routes[pattern]; rt != nil {
		return rt.Operation
	}
	return nil
}

// isJSON reports whether a media type is JSON.
func isJSON(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(strings.ToLower(mt))
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// checkKeywords refuses a schema keyword that only JSON Schema 2020-12
// has: the checks run kin-openapi's own validator, which would pass over
// it.
func checkKeywords(doc *openapi3.T) error {
	var bad []string
	err := doc.WalkSchemas(func(ptr string, ref *openapi3.SchemaRef) error {
		v := ref.Value
		if v.Const != nil || len(v.PrefixItems) != 0 || v.Contains != nil || len(v.PatternProperties) != 0 ||
			len(v.DependentSchemas) != 0 || v.PropertyNames != nil || v.UnevaluatedItems.Has != nil || v.UnevaluatedItems.Schema != nil ||
			v.UnevaluatedProperties.Has != nil || v.UnevaluatedProperties.Schema != nil || v.If != nil || v.Then != nil || v.Else != nil ||
			len(v.DependentRequired) != 0 || len(v.Defs) != 0 || v.ContentSchema != nil {
			bad = append(bad, ptr)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("openapi: walking the document's schemas: %w", err)
	}
	if len(bad) > 0 {
		return fmt.Errorf("openapi: a keyword only JSON Schema 2020-12 has, which the checks would pass over, at %s", strings.Join(bad, ", "))
	}
	return nil
}
