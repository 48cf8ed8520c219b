package apispec

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// What checking a request against the built-in document costs the
// server, per request: a listing's query, and a change's JSON body.
func BenchmarkCheckRequest(b *testing.B) {
	s, err := Load()
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name, pattern, method, target, body string
	}{
		{"agents query", "GET /api/v1/agents", "GET", "/api/v1/agents?limit=1000&kind=collector&syncState=failed&fleet=edge", ""},
		{"apikey body", "POST /api/v1/apikeys", "POST", "/api/v1/apikeys", `{"name":"ci","role":"viewer","fleets":["edge","core"],"expiresIn":"90d"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			mux := http.NewServeMux()
			var failed error
			mux.HandleFunc(bc.pattern, func(w http.ResponseWriter, r *http.Request) {
				if err := s.CheckRequest(w, r, bc.pattern); err != nil {
					failed = err
				}
			})
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(bc.method, bc.target, strings.NewReader(bc.body))
				mux.ServeHTTP(httptest.NewRecorder(), r)
			}
			if failed != nil {
				b.Fatal(failed)
			}
		})
	}
}
