package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/admin"
)

// getNoToken GETs an admin listener path without the admin token.
func getNoToken(t *testing.T, ts *testServer, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + ts.AdminAddr().String() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestHealthAndReadiness(t *testing.T) {
	est := newEstate(t)
	est.addVersion("0.149.0")
	tests := []struct {
		name   string
		mutate func(*server.Options)
	}{
		{"without an estate", func(*server.Options) {}},
		{"with an estate", func(o *server.Options) { o.Estate = est.dir }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, tt.mutate)
			if code, body := getNoToken(t, ts, "/healthz"); code != 200 || body != "ok\n" {
				t.Errorf("/healthz = %d %q", code, body)
			}
			code, body := getNoToken(t, ts, "/readyz")
			var rb admin.ReadyBody
			if err := json.Unmarshal([]byte(body), &rb); code != 200 || err != nil || !rb.Ready {
				t.Errorf("/readyz = %d %s", code, body)
			}
		})
	}
}
