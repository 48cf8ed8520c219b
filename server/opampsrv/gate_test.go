package opampsrv

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/myriarch/myriarch/server/store"
)

// tokenAuth accepts the bearer token "good" only.
type tokenAuth struct{}

func (tokenAuth) Authenticate(r *http.Request) (store.Credential, error) {
	if r.Header.Get("Authorization") == "Bearer good" {
		return store.Credential{Kind: "token", ID: "good"}, nil
	}
	return store.Credential{}, errors.New("no credential")
}

// recorder collects rejects.
type recorder struct {
	mu      sync.Mutex
	reasons []string
}

func (r *recorder) reject(reason string) {
	r.mu.Lock()
	r.reasons = append(r.reasons, reason)
	r.mu.Unlock()
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reasons
	r.reasons = nil
	return out
}

var upgradeHeader = map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}

// TestGate: the credential is checked first; an authenticated WebSocket
// upgrade then meets the gate, which answers with its status and
// Retry-After; plain-HTTP polls are not gated.
func TestGate(t *testing.T) {
	rec := &recorder{}
	gated := 0
	s, err := New(nil, tokenAuth{}, slog.New(slog.DiscardHandler),
		Metrics{Reject: rec.reject},
		Options{Gate: func() (int, int) { gated++; return http.StatusServiceUnavailable, 7 }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	tests := []struct {
		name       string
		header     map[string]string
		token      string
		wantStatus int
		wantRetry  string
		wantReason string
		wantGated  int
	}{
		{name: "authenticated websocket upgrade is gated", header: upgradeHeader, token: "good",
			wantStatus: http.StatusServiceUnavailable, wantRetry: "7", wantReason: "backpressure", wantGated: 1},
		{name: "websocket upgrade without a credential never reaches the gate", header: upgradeHeader,
			wantStatus: http.StatusUnauthorized, wantReason: "unauthorized"},
		{name: "plain HTTP poll is not gated", header: map[string]string{"Content-Type": "application/x-protobuf"},
			wantStatus: http.StatusUnauthorized, wantReason: "unauthorized"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gated = 0
			rec.take()
			method := http.MethodGet
			if tc.header["Content-Type"] != "" {
				method = http.MethodPost
			}
			req, _ := http.NewRequest(method, srv.URL+Path, strings.NewReader(""))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus || resp.Header.Get("Retry-After") != tc.wantRetry {
				t.Errorf("got %d Retry-After %q, want %d %q", resp.StatusCode, resp.Header.Get("Retry-After"), tc.wantStatus, tc.wantRetry)
			}
			if reasons := rec.take(); len(reasons) != 1 || reasons[0] != tc.wantReason {
				t.Errorf("rejects %v, want [%s]", reasons, tc.wantReason)
			}
			if gated != tc.wantGated {
				t.Errorf("gate asked %d times, want %d", gated, tc.wantGated)
			}
		})
	}
}
