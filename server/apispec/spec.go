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
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: writing the document as JSON: %w", err)
	}
	s := &Spec{doc: doc, json: js, routes: map[string]*routers.Route{}}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			s.routes[method+" "+path] = &routers.Route{Spec: doc, Path: path, PathItem: item, Method: method, Operation: op}
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
