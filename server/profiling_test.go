package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestProfiling: runtime profiles are on the admin listener, and only with the admin token.
func TestProfiling(t *testing.T) {
	ts := startServer(t)
	code, body := ts.api("GET", "/debug/pprof/heap?debug=1", nil)
	if code != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Fatalf("heap profile: %d %.100q", code, body)
	}
	code, body = ts.api("GET", "/debug/pprof/goroutine?debug=1", nil)
	if code != http.StatusOK || !strings.Contains(string(body), "goroutine profile") {
		t.Fatalf("goroutine profile: %d %.100q", code, body)
	}
	resp, err := http.Get("http://" + ts.AdminAddr().String() + "/debug/pprof/heap")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the admin token: %d, want 401", resp.StatusCode)
	}
}
