//go:build linux

package attack

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
// bearer token; the generated token file is 0600.
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
	}
	fi, err := os.Stat(filepath.Join(d.dataDir, "admin.token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin.token: %v %v, want mode 0600", fi.Mode(), err)
	}
}
