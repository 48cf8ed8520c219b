package admin_test

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/admin"
)

const adminToken = "adm-0123456789abcdef0123456789abcdef"

// step is one request to the admin API: from a source address, with an
// Authorization header, after the clock moved on.
type step struct {
	after  time.Duration
	remote string
	auth   string
	n      int // times sent (default 1)
	status int // each answer's status
}

// Requests with a wrong or no admin token spend their source's budget;
// past it they are answered 429 with Retry-After. The right token passes
// whatever its source's budget, and gives the source its budget back.
func TestWrongAdminTokensAreThrottledPerSource(t *testing.T) {
	const (
		wrong = "Bearer adm-wrong"
		right = "Bearer " + adminToken
		a     = "192.0.2.1:40000"
		b     = "192.0.2.2:40000"
	)
	tests := []struct {
		name  string
		steps []step
	}{
		{"wrong tokens: the burst, then 429", []step{
			{remote: a, auth: wrong, n: 10, status: 401},
			{remote: a, auth: wrong, n: 5, status: 429},
		}},
		{"no token and other schemes spend the same budget", []step{
			{remote: a, auth: "", n: 5, status: 401},
			{remote: a, auth: "Basic " + adminToken, n: 5, status: 401},
			{remote: a, auth: "", status: 429},
		}},
		{"each source has its own budget", []step{
			{remote: a, auth: wrong, n: 10, status: 401},
			{remote: a, auth: wrong, status: 429},
			{remote: b, auth: wrong, n: 10, status: 401},
		}},
		{"an IPv6 /64 is one source", []step{
			{remote: "[2001:db8::1]:1", auth: wrong, n: 5, status: 401},
			{remote: "[2001:db8::2]:1", auth: wrong, n: 5, status: 401},
			{remote: "[2001:db8::3]:1", auth: wrong, status: 429},
			{remote: "[2001:db8:0:1::1]:1", auth: wrong, status: 401},
		}},
		{"the budget refills at one per 6 s", []step{
			{remote: a, auth: wrong, n: 10, status: 401},
			{remote: a, auth: wrong, status: 429},
			{after: 6 * time.Second, remote: a, auth: wrong, status: 401},
			{remote: a, auth: wrong, status: 429},
		}},
		{"the right token passes from a source out of budget", []step{
			{remote: a, auth: wrong, n: 10, status: 401},
			{remote: a, auth: wrong, n: 3, status: 429},
			{remote: a, auth: right, n: 3, status: 200},
		}},
		{"the right token gives its source the whole budget back", []step{
			{remote: a, auth: wrong, n: 10, status: 401},
			{remote: a, auth: wrong, status: 429},
			{remote: a, auth: right, status: 200},
			{remote: a, auth: wrong, n: 10, status: 401},
			{remote: a, auth: wrong, status: 429},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			api := admin.New(admin.Deps{AdminToken: adminToken, Now: func() time.Time { return now }})
			for i, s := range tt.steps {
				now = now.Add(s.after)
				for j := range max(s.n, 1) {
					rec := request(api, "/api/v1/estate", s.remote, s.auth)
					if rec.Code != s.status {
						t.Fatalf("step %d, request %d (%s, %q): %d %s, want %d", i, j+1, s.remote, s.auth, rec.Code, rec.Body, s.status)
					}
					switch rec.Code {
					case 429:
						if ra := rec.Header().Get("Retry-After"); ra != "6" {
							t.Fatalf("step %d: 429 with Retry-After %q, want 6", i, ra)
						}
					case 401:
						if !strings.Contains(rec.Body.String(), "an admin token or API key is required") || rec.Header().Get("WWW-Authenticate") == "" {
							t.Fatalf("step %d: 401 %v %s", i, rec.Header(), rec.Body)
						}
					}
				}
			}
		})
	}
}

// Refusals are logged once per source and minute, then counted: a flood
// of wrong tokens costs two lines, not one per request.
func TestAdminRefusalsAreLoggedOncePerSource(t *testing.T) {
	var buf syncBuffer
	now := time.Unix(1000, 0)
	api := admin.New(admin.Deps{AdminToken: adminToken, Log: slog.New(slog.NewTextHandler(&buf, nil)),
		Now: func() time.Time { return now }})
	statuses := map[int]int{}
	for range 1000 {
		statuses[request(api, "/api/v1/estate", "192.0.2.1:40000", "Bearer adm-wrong").Code]++
	}
	if statuses[401] != 10 || statuses[429] != 990 {
		t.Fatalf("statuses %v, want 10 × 401 then 429", statuses)
	}
	if lines := strings.Count(buf.String(), "\n"); lines != 1 || !strings.Contains(buf.String(), "remote=192.0.2.1:40000") {
		t.Fatalf("%d log lines for 1 000 refusals from one source, want 1:\n%s", lines, buf.String())
	}
	now = now.Add(61 * time.Second)
	request(api, "/api/v1/estate", "192.0.2.2:40000", "")
	out := buf.String()
	if !strings.Contains(out, "source=192.0.2.1 count=999") || strings.Count(out, "\n") != 3 {
		t.Fatalf("after the minute, want the count of the 999 further refusals and the new source's line:\n%s", out)
	}
}

func request(api *admin.API, path, remote, auth string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path, nil)
	req.RemoteAddr = remote
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	return rec
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
