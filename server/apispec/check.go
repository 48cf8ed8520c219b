package apispec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxRequestBody bounds the request body read to check it; the handlers
// read no more.
const MaxRequestBody = 1 << 20

// Problem is a request that does not match the document: Problems name
// each field and what is wrong with it.
type Problem struct {
	Problems []string
}

func (p *Problem) Error() string {
	return "the request does not match the API: " + strings.Join(p.Problems, "; ")
}

// CheckRequest checks r, routed to pattern, against the document: its
// path values, query and body (read, bounded by MaxRequestBody, and put
// back for the handler). Credentials are the server's to check. It
// returns a *Problem for a request that does not match, nil for one that
// does or a route the document does not have.
func (s *Spec) CheckRequest(w http.ResponseWriter, r *http.Request, pattern string) error {
	rt, params, ok := s.route(r, pattern)
	if !ok {
		return nil
	}
	if r.Body != nil && r.Body != http.NoBody {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBody))
		if err != nil {
			return &Problem{Problems: []string{fmt.Sprintf("request body: %v", err)}}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if len(body) == 0 {
			r.Body = http.NoBody
		} else if r.Header.Get("Content-Type") == "" {
			// Every body of the API is JSON, and its handlers read it so.
			r.Header.Set("Content-Type", "application/json")
		}
	}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: rt,
		Options: &openapi3filter.Options{MultiError: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
			RejectWhenRequestBodyNotSpecified: true, SkipSettingDefaults: true}}
	if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
		return &Problem{Problems: capped(describe(err))}
	}
	return nil
}

// CheckResponse checks an answer of a documented route against the
// document: its status must be documented and a JSON body must match the
// status's schema. Other bodies (an archive, Prometheus text), and one
// the caller did not hold whole (held false), are checked for their
// status only.
func (s *Spec) CheckResponse(r *http.Request, pattern string, status int, header http.Header, body []byte, held bool) error {
	rt, params, ok := s.route(r, pattern)
	if !ok {
		return nil
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
		ExcludeResponseBody: !held || !isJSON(header.Get("Content-Type"))}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: rt, Options: opts},
		Status:                 status, Header: header, Body: io.NopCloser(bytes.NewReader(body)), Options: opts}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s answered %d, which the API document does not allow: %s", pattern, status, strings.Join(describe(err), "; "))
	}
	return nil
}

// MaxProblems bounds the problems a refusal lists; the rest are counted.
const MaxProblems = 20

func capped(list []string) []string {
	if len(list) <= MaxProblems {
		return list
	}
	return append(list[:MaxProblems:MaxProblems], fmt.Sprintf("and %d more problems", len(list)-MaxProblems))
}

// describe names, for each problem in err, where it is (a parameter, the
// body, and the field's path) and what is wrong.
func describe(err error) []string {
	switch e := err.(type) {
	case openapi3.MultiError:
		var out []string
		for _, x := range e {
			out = append(out, describe(x)...)
		}
		return out
	case *openapi3filter.RequestError:
		where := "request"
		switch {
		case e.Parameter != nil:
			where = e.Parameter.In + " parameter " + e.Parameter.Name
		case e.RequestBody != nil:
			where = "request body"
		}
		if e.Err == nil {
			return []string{where + ": " + e.Reason}
		}
		return prefixed(where, leaves(e.Err))
	case *openapi3filter.ResponseError:
		if e.Err == nil {
			return []string{"response: " + e.Reason}
		}
		return prefixed("response body", leaves(e.Err))
	}
	return leaves(err)
}

// leaves are the innermost problems of a schema check, each with the path
// of its field.
func leaves(err error) []string {
	if m, ok := err.(openapi3.MultiError); ok {
		var out []string
		for _, x := range m {
			out = append(out, leaves(x)...)
		}
		return out
	}
	var m openapi3.MultiError
	if errors.As(err, &m) {
		return leaves(m)
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		msg := ve.Error()
		if _, after, ok := strings.Cut(msg, "': "); ok && strings.HasPrefix(msg, "at '") {
			msg = after
		}
		return []string{field(ve.InstanceLocation) + msg}
	}
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		return []string{field(se.JSONPointer()) + se.Reason}
	}
	var pe *openapi3filter.ParseError
	if errors.As(err, &pe) {
		return []string{pe.Error()}
	}
	return []string{err.Error()}
}

func field(path []string) string {
	if len(path) == 0 {
		return ""
	}
	return "field " + strings.Join(path, ".") + ": "
}

func prefixed(where string, list []string) []string {
	for i, s := range list {
		list[i] = where + ": " + s
	}
	return list
}
