package admin_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/apispec"
)

// A document saying less than the server answers: readyz's JSON has a
// boolean "ready", the document wants a string; the tokens route is not
// documented at all.
const strictDoc = `openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /readyz:
    get:
      responses:
        "200":
          description: ready
          content:
            application/json:
              schema:
                type: object
                required: [ready]
                properties:
                  ready: {type: string}
`

// Every answer of a documented route passes the net Deps.CheckResponse
// holds: an answer the document does not allow is told, with the route
// and the field; an undocumented route's answers are not checked.
func TestAnswersAreCheckedAgainstTheDocument(t *testing.T) {
	spec, err := apispec.Parse([]byte(strictDoc))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var told []string // guarded by mu
	api := admin.New(admin.Deps{AdminToken: "adm", Spec: spec, CheckResponse: func(pattern string, err error) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, pattern+": "+err.Error())
	}})
	for _, path := range []string{"/readyz", "/healthz"} {
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d", path, rec.Code)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 1 || !strings.HasPrefix(told[0], "GET /readyz: ") || !strings.Contains(told[0], "field ready") {
		t.Fatalf("told %q", told)
	}
	// The document itself is served, to anyone.
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/openapi.json", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"/readyz"`) {
		t.Fatalf("openapi.json: %d %s", rec.Code, rec.Body)
	}
}
