package apispec

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testDoc = `openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /things/{id}:
    parameters:
      - {name: id, in: path, required: true, schema: {type: string, pattern: "^[a-z]+$"}}
    get:
      operationId: getThing
      parameters:
        - {name: limit, in: query, schema: {type: integer, minimum: 1}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                required: [name, tags]
                properties:
                  name: {type: string}
                  tags: {type: [array, "null"], items: {type: string}}
                  size: {type: integer}
    post:
      operationId: putThing
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              required: [name]
              properties:
                name: {type: string, minLength: 1}
                labels: {type: object, additionalProperties: {type: string}}
      responses:
        "204": {description: done}
`

func parseTest(t *testing.T) *Spec {
	t.Helper()
	s, err := Parse([]byte(testDoc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The document built into the binary loads, is OpenAPI 3.1 and documents
// routes; Routes uses the server's pattern syntax.
func TestBuiltInDocumentLoads(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if !s.doc.IsOpenAPI31OrLater() || len(s.JSON()) == 0 || !strings.HasPrefix(string(s.JSON()), "{") {
		t.Fatalf("document %s…", s.JSON()[:min(len(s.JSON()), 80)])
	}
	if !s.Has("GET /api/v1/agents/{uid}") || s.Operation("GET /api/v1/agents/{uid}") == nil {
		t.Fatalf("routes: %v", s.Routes())
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"not YAML", "openapi: [", "reading the document"},
		{"OpenAPI 3.0", strings.Replace(testDoc, "3.1.0", "3.0.3", 1), "want 3.1"},
		{"a path without its parameter", strings.Replace(testDoc, "/things/{id}:", "/things/{id}/{other}:", 1), "not valid"},
		{"a keyword only 2020-12 has", strings.Replace(testDoc, "name: {type: string}", "name: {type: string, const: x}", 1), "only JSON Schema 2020-12 has, which the checks would pass over, at /paths/~1things~1{id}/get"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// serve routes a request through a ServeMux, as the server does, and
// returns what CheckRequest said of it.
func serve(t *testing.T, s *Spec, pattern string, r *http.Request) (error, string) {
	t.Helper()
	var got error
	var body string
	mux := http.NewServeMux()
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		got = s.CheckRequest(w, r, pattern)
		if got == nil && r.Body != nil {
			b := new(strings.Builder)
			_, _ = io.Copy(b, r.Body)
			body = b.String()
		}
	})
	mux.ServeHTTP(httptest.NewRecorder(), r)
	return got, body
}

func TestCheckRequest(t *testing.T) {
	s := parseTest(t)
	for _, tc := range []struct {
		name, pattern, method, target, body string
		want                                []string // in the problems; none: the request matches
	}{
		{"a good read", "GET /things/{id}", "GET", "/things/abc?limit=3", "", nil},
		{"a path value off its pattern", "GET /things/{id}", "GET", "/things/ABC", "", []string{"path parameter id"}},
		{"a query of the wrong type", "GET /things/{id}", "GET", "/things/abc?limit=many", "", []string{"query parameter limit"}},
		{"a query below its minimum", "GET /things/{id}", "GET", "/things/abc?limit=0", "", []string{"query parameter limit"}},
		{"a good body", "POST /things/{id}", "POST", "/things/abc", `{"name":"a","labels":{"x":"y"}}`, nil},
		{"a body without a required field", "POST /things/{id}", "POST", "/things/abc", `{"labels":{}}`, []string{`request body: field name: property "name" is missing`}},
		{"an unknown field", "POST /things/{id}", "POST", "/things/abc", `{"name":"a","colour":"red"}`, []string{"request body", "colour"}},
		{"a field of the wrong type", "POST /things/{id}", "POST", "/things/abc", `{"name":"a","labels":{"x":1}}`, []string{"request body: field labels.x"}},
		{"no body", "POST /things/{id}", "POST", "/things/abc", "", []string{"request body"}},
		{"not JSON", "POST /things/{id}", "POST", "/things/abc", `{"name":`, []string{"request body"}},
		{"a route the document does not have", "GET /other", "GET", "/other?limit=x", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			if tc.body != "" {
				r.Header.Set("Content-Type", "application/json")
			}
			err, body := serve(t, s, tc.pattern, r)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if body != tc.body {
					t.Fatalf("the handler read %q, want the body %q", body, tc.body)
				}
				return
			}
			p, ok := err.(*Problem)
			if !ok {
				t.Fatalf("err %v (%T), want a *Problem", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(p.Error(), w) {
					t.Errorf("%q does not name %q", p.Error(), w)
				}
			}
		})
	}
}

// A body over MaxRequestBody is refused without being read whole.
func TestCheckRequestBoundsTheBody(t *testing.T) {
	s := parseTest(t)
	big := `{"name":"` + strings.Repeat("a", MaxRequestBody) + `"}`
	r := httptest.NewRequest("POST", "/things/abc", strings.NewReader(big))
	r.Header.Set("Content-Type", "application/json")
	err, _ := serve(t, s, "POST /things/{id}", r)
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("err %v", err)
	}
}

func TestCheckResponse(t *testing.T) {
	s := parseTest(t)
	js := http.Header{"Content-Type": {"application/json"}}
	for _, tc := range []struct {
		name   string
		status int
		header http.Header
		body   string
		held   bool
		want   string // "" for an answer that matches
	}{
		{"a match", 200, js, `{"name":"a","tags":["x"],"size":3}`, true, ""},
		{"null where the document allows it", 200, js, `{"name":"a","tags":null}`, true, ""},
		{"a field the document does not list", 200, js, `{"name":"a","tags":[],"new":1}`, true, ""},
		{"a required field missing", 200, js, `{"name":"a"}`, true, `field tags: property "tags" is missing`},
		{"a changed type", 200, js, `{"name":"a","tags":[],"size":"3"}`, true, "field size"},
		{"null where it is not allowed", 200, js, `{"name":null,"tags":[]}`, true, "field name"},
		{"a status the document does not list", 418, js, `{}`, true, "418"},
		{"a body not held", 200, js, `{"na`, false, ""},
		{"not JSON", 200, http.Header{"Content-Type": {"text/plain"}}, "ok", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/things/abc", nil)
			r.SetPathValue("id", "abc")
			err := s.CheckResponse(r, "GET /things/{id}", tc.status, tc.header, []byte(tc.body), tc.held)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want it to name %q", err, tc.want)
			}
		})
	}
}
