package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server"
)

// The accounts API refuses what it must with the reason, and changes
// nothing: more rights than the creator has, a scope naming no fleet, a
// duplicate, a short password, an unknown role, the last admin.
func TestAccountsRefusals(t *testing.T) {
	est := newEstate(t)
	est.mkdir("teams/data-flow/blueprints")
	est.write("teams/data-flow/blueprints/gw.yaml", configBlueprint)
	est.write("fleets/edge.yaml", "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: data-flow/gw\n")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	key := func(role string, fleets []string) string {
		code, body := ts.api("POST", "/api/v1/apikeys", map[string]any{"name": "k-" + role, "role": role, "fleets": fleets})
		if code != http.StatusCreated {
			t.Fatalf("key: %d %s", code, body)
		}
		var k struct{ Secret string }
		json.Unmarshal(body, &k)
		return k.Secret
	}
	edgeAdmin := key("admin", []string{"edge"})
	post := func(cred, path string, body any) (int, string) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", "http://"+ts.AdminAddr().String()+path, strings.NewReader(string(b)))
		req.Header.Set("Authorization", "Bearer "+cred)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, out.String()
	}
	admin := ts.AdminToken()
	for _, tc := range []struct {
		name, cred, path string
		body             any
		status           int
		want             string
	}{
		{"a key beyond its creator's scope", edgeAdmin, "/api/v1/apikeys", map[string]any{"name": "wide", "role": "viewer"}, 403, `"need": "viewer"`},
		{"a user beyond its creator's role", key("operator", nil), "/api/v1/users", map[string]any{"name": "x", "role": "viewer"}, 403, "needs the admin role"},
		{"a scope naming no fleet", admin, "/api/v1/users", map[string]any{"name": "x", "role": "viewer", "fleets": []string{"nowhere"}}, 400, `\"nowhere\" names no fleet`},
		{"an unknown role", admin, "/api/v1/apikeys", map[string]any{"name": "x", "role": "superuser"}, 400, "request body: field role: value is not one of the allowed values"},
		{"a short password", admin, "/api/v1/users", map[string]any{"name": "x", "role": "viewer", "password": "short"}, 400, "at least 12 characters"},
		{"a bad user name", admin, "/api/v1/users", map[string]any{"name": "a b", "role": "viewer"}, 400, "not a user name"},
		{"an unknown field", admin, "/api/v1/users", map[string]any{"name": "x", "role": "viewer", "admin": true}, 400, `request body: property \"admin\" is unsupported`},
		{"a zero expiry", admin, "/api/v1/apikeys", map[string]any{"name": "x", "role": "viewer", "expiresIn": "0s"}, 400, "between a second and ten years"},
	} {
		code, body := post(tc.cred, tc.path, tc.body)
		if code != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, code, body, tc.status, tc.want)
		}
	}
	if code, body := ts.api("GET", "/api/v1/users", nil); code != 200 || strings.Contains(string(body), `"name": "x"`) {
		t.Fatalf("a refused user was created: %s", body)
	}
	// Within its scope, a scoped admin may grant.
	if code, body := post(edgeAdmin, "/api/v1/apikeys", map[string]any{"name": "edge-ci", "role": "operator", "fleets": []string{"edge"}}); code != 201 {
		t.Fatalf("a key within its creator's scope: %d %s", code, body)
	}
	// Users: a duplicate, the last admin.
	if code, body := ts.api("POST", "/api/v1/users", map[string]any{"name": "ada", "role": "admin", "password": "correct horse battery"}); code != 201 {
		t.Fatalf("ada: %d %s", code, body)
	}
	if code, body := ts.api("POST", "/api/v1/users", map[string]any{"name": "ada", "role": "viewer"}); code != http.StatusConflict {
		t.Fatalf("a duplicate: %d %s", code, body)
	}
	if code, body := ts.api("DELETE", "/api/v1/users/ada", nil); code != http.StatusConflict || !strings.Contains(string(body), "no user with the admin role") {
		t.Fatalf("deleting the last admin: %d %s", code, body)
	}
	if code, body := ts.api("PATCH", "/api/v1/users/ada", map[string]any{"fleets": []string{"edge"}}); code != http.StatusConflict {
		t.Fatalf("scoping the last admin: %d %s", code, body)
	}
	if code, body := ts.api("PATCH", "/api/v1/users/ada", map[string]any{"password": "a new correct horse"}); code != 200 || !strings.Contains(string(body), `"hasPassword": true`) {
		t.Fatalf("a new password: %d %s", code, body)
	}
	// Who am I.
	code, body := ts.apiAs(edgeAdmin, "GET", "/api/v1/whoami")
	if code != 200 || !strings.Contains(string(body), `"role": "admin"`) || !strings.Contains(string(body), `"edge"`) {
		t.Fatalf("whoami: %d %s", code, body)
	}
}

// An expired API key is refused from the moment it expires.
func TestExpiredKeyRefused(t *testing.T) {
	ts := startServer(t)
	code, body := ts.api("POST", "/api/v1/apikeys", map[string]any{"name": "short", "role": "viewer", "expiresIn": "2s"})
	var k struct{ Secret, ExpiresAt string }
	json.Unmarshal(body, &k)
	if code != http.StatusCreated || k.ExpiresAt == "" {
		t.Fatalf("key: %d %s", code, body)
	}
	if code, _ := ts.apiAs(k.Secret, "GET", "/api/v1/agents"); code != http.StatusOK {
		t.Fatalf("before it expires: %d", code)
	}
	testkit.WaitFor(t, "the key to expire", func() bool {
		code, body := ts.apiAs(k.Secret, "GET", "/api/v1/agents")
		return code == http.StatusUnauthorized && strings.Contains(string(body), "expired at")
	})
}
