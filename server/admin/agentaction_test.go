package admin_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// A per-agent action answers the agent when it acts, and a 404 naming
// the agent when the UID does not parse or the action refuses it.
func TestAgentActionAnswers(t *testing.T) {
	f := newFleet(t, 1)
	defer f.close()
	for _, tc := range []struct {
		name, uid string
		code      int
		body      string
	}{
		{"a collector", f.collectors[0].String(), http.StatusOK, `"instanceUid": "` + f.collectors[0].String()},
		{"not a UID", "host-1", http.StatusNotFound, `no collector \"host-1\": not an instance UID`},
		{"an unknown collector", uuid.Nil.String(), http.StatusNotFound, "no collector " + uuid.Nil.String()},
	} {
		req := httptest.NewRequest("POST", "/api/v1/agents/"+tc.uid+"/retry", nil)
		req.Header.Set("Authorization", "Bearer adm")
		rec := httptest.NewRecorder()
		f.api.ServeHTTP(rec, req)
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("%s: %d %.300s, want %d with %s", tc.name, rec.Code, rec.Body.String(), tc.code, tc.body)
		}
	}
}
