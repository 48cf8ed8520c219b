//go:build linux

package attack

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// adminRoutes are the admin API's authenticated routes.
var adminRoutes = []string{
	"GET /api/v1/tokens", "POST /api/v1/tokens", "DELETE /api/v1/tokens/0123456789ab",
	"GET /api/v1/agents", "GET /api/v1/agents/01890000-0000-7000-8000-000000000000",
	"GET /api/v1/agents/01890000-0000-7000-8000-000000000000/config",
	"GET /api/v1/agents/01890000-0000-7000-8000-000000000000/context",
	"POST /api/v1/agents/01890000-0000-7000-8000-000000000000/config/retry",
	"POST /api/v1/agents/01890000-0000-7000-8000-000000000000/retry",
	"GET /api/v1/pairings", "GET /api/v1/fleets", "POST /api/v1/fleets/edge/resume",
	"POST /api/v1/estate/reload", "GET /api/v1/estate",
	"GET /debug/pprof/", "GET /debug/pprof/heap", "GET /debug/pprof/cmdline", "GET /debug/pprof/symbol",
}

// TestAdminAPI (held): every route refuses requests without the right
// bearer token; the generated token file is 0600. A request with the right
// token after each route's refusals gives the source back the budget of
// wrong tokens (see TestAdminTokenFlood), so every refusal here is a 401.
func TestAdminAPI(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	last := "x" // the token's last character changed, whatever it was
	if strings.HasSuffix(d.adminToken, last) {
		last = "y"
	}
	near := d.adminToken[:len(d.adminToken)-1] + last
	for _, route := range adminRoutes {
		method, path, _ := strings.Cut(route, " ")
		for name, auth := range map[string]string{
			"none": "", "wrong": "Bearer " + near, "longer": "Bearer " + d.adminToken + "x",
			"prefix": "Bearer " + d.adminToken[:8], "basic": "Basic " + d.adminToken,
		} {
			req, _ := http.NewRequest(method, "http://"+d.admin+path, nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := d.http.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s with %s authorization: %d, want 401", route, name, resp.StatusCode)
			}
		}
		if code, body := d.api("GET", "/api/v1/estate", nil); code != http.StatusOK {
			t.Fatalf("the right token after refusals: %d %s", code, body)
		}
	}
	fi, err := os.Stat(filepath.Join(d.dataDir, "admin.token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin.token: %v %v, want mode 0600", fi.Mode(), err)
	}
}

// TestAdminTokenFlood: 1 000 wrong bearer tokens from one address, as fast
// as one connection sends them, spend the address's budget of failures:
// the rest are answered 429 with Retry-After, the refusals are one log
// line, and the right token still passes from that address at once.
func TestAdminTokenFlood(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	const n = 1000
	routes := []string{"/api/v1/agents", "/api/v1/tokens", "/api/v1/estate", "/debug/pprof/heap"}
	statuses := map[int]int{}
	start := time.Now()
	for i := range n {
		req, _ := http.NewRequest("GET", "http://"+d.admin+routes[i%len(routes)], nil)
		req.Header.Set("Authorization", "Bearer "+strings.Repeat("g", 40)+strconv.Itoa(i))
		resp, err := d.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}
	took := time.Since(start)
	// 10 at once, then one more each 6 s the flood lasted.
	most := 10 + int(took/(6*time.Second)) + 1
	figure(t, "%d wrong admin tokens from one address in %s: %d × 401, %d × 429", n, took.Round(time.Millisecond),
		statuses[http.StatusUnauthorized], statuses[http.StatusTooManyRequests])
	if statuses[http.StatusUnauthorized] < 10 || statuses[http.StatusUnauthorized] > most ||
		statuses[http.StatusUnauthorized]+statuses[http.StatusTooManyRequests] != n {
		t.Errorf("statuses %v: want the budget of 10 (up to %d) answered 401, then 429", statuses, most)
	}
	if code, body := d.api("GET", "/api/v1/estate", nil); code != http.StatusOK {
		t.Fatalf("the right token from the flooding address: %d %s", code, body)
	}
	req, _ := http.NewRequest("GET", "http://"+d.admin+"/api/v1/estate", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	if resp, err := d.http.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong token after the right one: %v %v, want 401 (the budget given back)", resp, err)
	} else {
		resp.Body.Close()
	}
	if lines := strings.Count(d.log(), "admin API request refused"); lines != 1 {
		t.Errorf("%d log lines for %d refusals from one address, want 1 (then a count a minute later)", lines, n+1)
	}
}
