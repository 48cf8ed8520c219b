package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/apispec"
	"github.com/myriarch/myriarch/server/audit"
)

// documented reports whether a route belongs in the API document: the
// admin API's and the health and metrics routes, not the console's pages
// or the runtime profiles.
func documented(pattern string) bool {
	_, path, _ := strings.Cut(pattern, " ")
	return strings.HasPrefix(path, "/api/") || path == "/healthz" || path == "/readyz" || path == "/metrics"
}

// The document and the router agree: every route of the admin API (on
// one instance, or on several sharing PostgreSQL) is documented, and
// every documented route is served.
func TestEveryRouteIsDocumented(t *testing.T) {
	spec, err := apispec.Load()
	if err != nil {
		t.Fatal(err)
	}
	est := newEstate(t)
	single := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	shared := startInstances(t, 1)[0]
	served := map[string]bool{}
	for _, ts := range []*testServer{single, shared} {
		for _, p := range ts.Admin().Patterns() {
			if !documented(p) {
				continue
			}
			served[p] = true
			if !spec.Has(p) {
				t.Errorf("route %s is not in api/openapi.yaml", p)
			}
		}
	}
	for _, p := range spec.Routes() {
		if !served[p] {
			t.Errorf("api/openapi.yaml documents %s, which the server does not serve", p)
		}
	}
}

// GET /api/v1/openapi.json is the document, to anyone.
func TestOpenAPIDocumentServed(t *testing.T) {
	ts := startServer(t)
	resp, err := http.Get("http://" + ts.AdminAddr().String() + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	got, err := apispec.Parse(body)
	if err != nil {
		t.Fatalf("the served document: %v", err)
	}
	want, _ := apispec.Load()
	if !slices.Equal(got.Routes(), want.Routes()) {
		t.Fatalf("served routes %v, built in %v", got.Routes(), want.Routes())
	}
}

// A request that does not match the document is answered 400 naming the
// field, before its handler runs; a change refused so is in the audit
// trail as an error. A caller without a credential is answered 401
// whatever it sends.
func TestRequestsCheckedAgainstTheDocument(t *testing.T) {
	ts := startServer(t)
	for _, tc := range []struct {
		name, method, path string
		body               any
		want               []string
	}{
		{"a token name of the wrong type", "POST", "/api/v1/tokens", map[string]any{"name": 5}, []string{"request body: field name"}},
		{"an unknown field", "POST", "/api/v1/tokens", map[string]any{"name": "a", "colour": "red"}, []string{"request body", "colour"}},
		{"a role the API does not have", "POST", "/api/v1/apikeys", map[string]any{"name": "k", "role": "root"}, []string{"request body: field role"}},
		{"a list limit that is no number", "GET", "/api/v1/agents?limit=many", nil, []string{"query parameter limit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := ts.forT(t)
			head := ts.auditHead()
			code, body := ts.api(tc.method, tc.path, tc.body)
			if code != http.StatusBadRequest {
				t.Fatalf("%d %s", code, body)
			}
			for _, w := range tc.want {
				if !bytes.Contains(body, []byte(w)) {
					t.Errorf("%s does not name %q", body, w)
				}
			}
			if tc.method == "GET" {
				return
			}
			p, err := ts.Audit().List(context.Background(), audit.Query{Limit: 1})
			if err != nil || len(p.Records) != 1 || p.Records[0].ID <= head || p.Records[0].Outcome != audit.OutcomeError ||
				!strings.Contains(p.Records[0].Detail, "does not match the API") {
				t.Fatalf("audit %+v %v", p.Records, err)
			}
		})
	}
	// Without a credential, the body is not read: 401.
	req, _ := http.NewRequest("POST", "http://"+ts.AdminAddr().String()+"/api/v1/tokens", strings.NewReader(`{"name":5}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a credential: %d", resp.StatusCode)
	}
	// The tokens listed are untouched by the refused requests.
	code, body := ts.api("GET", "/api/v1/tokens", nil)
	var list struct{ Tokens []json.RawMessage }
	if code != 200 || json.Unmarshal(body, &list) != nil || len(list.Tokens) != 0 {
		t.Fatalf("tokens after refused requests: %d %s", code, body)
	}
}

// Hostile bodies and queries meet the document's check after the caller
// is known: each is answered 400 naming what is wrong, at once, and
// nothing is created.
func TestHostileRequestsAgainstTheDocument(t *testing.T) {
	ts := startServer(t)
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	wide := make(map[string]any, 50000)
	for i := range 50000 {
		wide[fmt.Sprintf("k%d", i)] = i
	}
	for _, tc := range []struct {
		name, method, path string
		body               []byte
		want               string
	}{
		{"a body over 1 MiB", "POST", "/api/v1/tokens", []byte(`{"name":"` + strings.Repeat("a", apispec.MaxRequestBody) + `"}`), "too large"},
		{"a field nested 20 000 deep", "POST", "/api/v1/tokens", []byte(`{"name":"a","labels":` + deep + `}`), "request body"},
		{"50 000 unknown fields", "POST", "/api/v1/tokens", mustJSON(t, wide), "more problems"},
		{"not JSON", "POST", "/api/v1/tokens", []byte(`{"name": "a"`), "request body"},
		{"a query of 2 000 values", "GET", "/api/v1/agents?" + strings.Repeat("limit=1&", 2000), nil, "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			req, _ := http.NewRequest(tc.method, "http://"+ts.AdminAddr().String()+tc.path, bytes.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+ts.AdminToken())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), tc.want) || len(body) > 16<<10 {
				t.Fatalf("%d (%d bytes) %.300s, want 400 naming %q", resp.StatusCode, len(body), body, tc.want)
			}
			t.Logf("answered in %v", time.Since(start))
		})
	}
	code, body := ts.api("GET", "/api/v1/tokens", nil)
	if code != 200 || strings.Contains(string(body), `"name"`) {
		t.Fatalf("a refused request created a token: %s", body)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
