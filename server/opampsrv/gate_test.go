package opampsrv

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/server/store"
)

type refuseAll struct{}

func (refuseAll) Authenticate(*http.Request) (store.Credential, error) {
	return store.Credential{}, errors.New("no credential")
}

// TestGate: a refusing gate answers WebSocket upgrades with its status and
// Retry-After before authentication; plain-HTTP polls are not gated.
func TestGate(t *testing.T) {
	var reasons []string
	s, err := New(nil, refuseAll{}, slog.New(slog.DiscardHandler),
		Metrics{Reject: func(r string) { reasons = append(reasons, r) }},
		Options{Gate: func() (int, int) { return http.StatusServiceUnavailable, 7 }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	tests := []struct {
		name       string
		header     map[string]string
		wantStatus int
		wantRetry  string
		wantReason string
	}{
		{name: "websocket upgrade is gated",
			header:     map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="},
			wantStatus: http.StatusServiceUnavailable, wantRetry: "7", wantReason: "backpressure"},
		{name: "plain HTTP poll is not gated",
			header:     map[string]string{"Content-Type": "application/x-protobuf"},
			wantStatus: http.StatusUnauthorized, wantReason: "unauthorized"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reasons = nil
			method := http.MethodGet
			if tc.header["Content-Type"] != "" {
				method = http.MethodPost
			}
			req, _ := http.NewRequest(method, srv.URL+Path, strings.NewReader(""))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus || resp.Header.Get("Retry-After") != tc.wantRetry {
				t.Errorf("got %d Retry-After %q, want %d %q", resp.StatusCode, resp.Header.Get("Retry-After"), tc.wantStatus, tc.wantRetry)
			}
			if len(reasons) != 1 || reasons[0] != tc.wantReason {
				t.Errorf("rejects %v, want [%s]", reasons, tc.wantReason)
			}
		})
	}
}
