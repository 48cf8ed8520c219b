package admin_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// A per-agent action answers the agent when it acts, and a 404 naming
// the agent when the UID does not parse or the action refuses it; a
// fleet-wide retry answers how many it retried, or a 404 naming the fleet.
func TestAgentActionAnswers(t *testing.T) {
	f := newFleet(t, 1)
	defer f.close()
	for _, tc := range []struct {
		name, path string
		code       int
		body       string
	}{
		{"a collector", "/api/v1/agents/" + f.collectors[0].String() + "/retry", http.StatusOK, `"instanceUid": "` + f.collectors[0].String()},
		{"not a UID", "/api/v1/agents/host-1/retry", http.StatusNotFound, `no collector \"host-1\": not an instance UID`},
		{"an unknown collector", "/api/v1/agents/" + uuid.Nil.String() + "/retry", http.StatusNotFound, "no collector " + uuid.Nil.String()},
		{"a fleet", "/api/v1/fleets/edge/retry", http.StatusOK, `"retried": 0`},
		{"an unknown fleet", "/api/v1/fleets/core/retry", http.StatusNotFound, `no fleet \"core\"`},
	} {
		req := httptest.NewRequest("POST", tc.path, nil)
		req.Header.Set("Authorization", "Bearer adm")
		rec := httptest.NewRecorder()
		f.api.ServeHTTP(rec, req)
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("%s: %d %.300s, want %d with %s", tc.name, rec.Code, rec.Body.String(), tc.code, tc.body)
		}
	}
}
