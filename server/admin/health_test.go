package admin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/myriarch/myriarch/server/admin"
)

func TestHealthAndReadinessNeedNoToken(t *testing.T) {
	var mu sync.Mutex
	var missing []string // guarded by mu
	api := admin.New(admin.Deps{AdminToken: "adm", Ready: func() []string {
		mu.Lock()
		defer mu.Unlock()
		return missing
	}})
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest("GET", path, nil)) // no Authorization header
		return rec
	}
	setMissing := func(m ...string) {
		mu.Lock()
		defer mu.Unlock()
		missing = m
	}

	tests := []struct {
		name     string
		missing  []string
		path     string
		status   int
		ready    bool
		notReady []string
	}{
		{"alive while not ready", []string{"store not open"}, "/healthz", 200, false, nil},
		{"not ready: one part", []string{"store not open"}, "/readyz", 503, false, []string{"store not open"}},
		{"not ready: several parts", []string{"estate not loaded", "OpAMP listener not serving"}, "/readyz", 503, false,
			[]string{"estate not loaded", "OpAMP listener not serving"}},
		{"ready", nil, "/readyz", 200, true, nil},
		{"alive when ready", nil, "/healthz", 200, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setMissing(tt.missing...)
			rec := get(tt.path)
			if rec.Code != tt.status {
				t.Fatalf("GET %s = %d %s, want %d", tt.path, rec.Code, rec.Body, tt.status)
			}
			if tt.path == "/healthz" {
				if rec.Body.String() != "ok\n" {
					t.Errorf("healthz body %q", rec.Body)
				}
				return
			}
			var body admin.ReadyBody
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("readyz body %q: %v", rec.Body, err)
			}
			if body.Ready != tt.ready || !reflect.DeepEqual(body.NotReady, tt.notReady) {
				t.Errorf("readyz = %+v, want ready=%v notReady=%v", body, tt.ready, tt.notReady)
			}
		})
	}

	// Without a readiness source the API is ready; other routes still want the token.
	bare := admin.New(admin.Deps{AdminToken: "adm"})
	rec := httptest.NewRecorder()
	bare.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("readyz without a readiness source = %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	bare.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/tokens", nil))
	if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), "an admin token or API key is required") {
		t.Errorf("tokens without a token = %d %s", rec.Code, rec.Body)
	}
}
