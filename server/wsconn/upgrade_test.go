package wsconn

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestUpgradeRefusals(t *testing.T) {
	good := map[string]string{"Connection": "keep-alive, Upgrade", "Upgrade": "websocket",
		"Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range good {
			h[a] = b
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	tests := []struct {
		name   string
		method string
		hdr    map[string]string
		status int
		says   string
	}{
		{"POST", http.MethodPost, good, http.StatusMethodNotAllowed, "must be a GET"},
		{"no Connection upgrade", "", with("Connection", "keep-alive"), http.StatusBadRequest, `"Connection" must contain "Upgrade"`},
		{"no Upgrade header", "", with("Upgrade", ""), http.StatusBadRequest, `"Upgrade" must contain "websocket"`},
		{"old version", "", with("Sec-WebSocket-Version", "8"), http.StatusUpgradeRequired, `Sec-WebSocket-Version "8"`},
		{"short key", "", with("Sec-WebSocket-Key", "c2hvcnQ="), http.StatusBadRequest, `Sec-WebSocket-Key "c2hvcnQ="`},
		{"key not base64", "", with("Sec-WebSocket-Key", "!!!"), http.StatusBadRequest, "not 16 bytes in base64"},
		{"foreign origin", "", with("Origin", "https://evil.example"), http.StatusForbidden, `Origin "https://evil.example"`},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, err := Upgrade(w, r); err == nil {
			c.nc.Close()
			t.Errorf("%s: upgraded", r.Header.Get("X-Case"))
		}
	}))
	defer srv.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.method
			if m == "" {
				m = http.MethodGet
			}
			req, _ := http.NewRequest(m, srv.URL, nil)
			for k, v := range tt.hdr {
				req.Header.Set(k, v)
			}
			req.Header.Set("X-Case", tt.name)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.says) {
				t.Errorf("got %d %q, want %d containing %q", resp.StatusCode, body, tt.status, tt.says)
			}
			if tt.status == http.StatusUpgradeRequired && resp.Header.Get("Sec-WebSocket-Version") != "13" {
				t.Error("426 without Sec-WebSocket-Version: 13")
			}
		})
	}
}
