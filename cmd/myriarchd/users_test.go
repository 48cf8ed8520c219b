package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// Users and API keys through the CLI, against a real server: every bad
// input refused with its reason and nothing changed, a key working as a
// bearer token until it is revoked.
func TestUsersAndKeysCLI(t *testing.T) {
	cli := startTestServer(t, "").cli
	if code, out, errs := cli("correct horse battery\n", "users", "create", "--name", "ada", "--role", "admin", "--password-stdin", "-o", "json"); code != 0 ||
		!strings.Contains(out, `"hasPassword": true`) || strings.Contains(out, "correct horse") {
		t.Fatalf("users create: %d %s %s", code, out, errs)
	}
	for _, bad := range []struct {
		input string
		args  []string
		want  string
	}{
		{"short\n", []string{"users", "create", "--name", "bob", "--role", "viewer", "--password-stdin"}, "at least 12 characters"},
		{"", []string{"users", "create", "--name", "bob", "--role", "root"}, "request body: field role: value is not one of the allowed values"},
		{"", []string{"users", "create", "--name", "bob", "--role", "viewer", "--fleet", "nowhere"}, `"nowhere" names no fleet`},
		{"", []string{"users", "create", "--name", "ada", "--role", "viewer"}, "exists already"},
		{"", []string{"users", "delete", "ada"}, "no user with the admin role over every fleet"},
		{"", []string{"users", "update", "ada", "--role", "viewer"}, "no user with the admin role over every fleet"},
		{"", []string{"users", "delete", "nobody"}, "404"},
		{"", []string{"apikeys", "create", "--name", "ci", "--role", "viewer", "--expires-in", "soon"}, `"soon" is not a duration`},
		{"", []string{"apikeys", "create", "--name", "ci", "--role", "god"}, "request body: field role: value is not one of the allowed values"},
	} {
		code, _, errs := cli(bad.input, bad.args...)
		if code != 3 || !strings.Contains(errs, bad.want) {
			t.Errorf("%v: %d %q, want an error with %q", bad.args, code, errs, bad.want)
		}
	}
	if code, out, _ := cli("", "users", "list"); code != 0 || !strings.Contains(out, "ada") || strings.Contains(out, "bob") || !strings.Contains(out, "(every fleet)") {
		t.Fatalf("users list after refusals: %d\n%s", code, out)
	}
	code, out, errs := cli("", "apikeys", "create", "--name", "ci", "--role", "viewer", "--expires-in", "90d", "-o", "json")
	var key struct{ ID, Secret, ExpiresAt string }
	json.Unmarshal([]byte(out), &key)
	if code != 0 || !strings.HasPrefix(key.Secret, "myrkey_") || key.ExpiresAt == "" {
		t.Fatalf("apikeys create: %d %s %s", code, out, errs)
	}
	if code, out, _ := cli("", "apikeys", "list"); code != 0 || !strings.Contains(out, key.ID) || strings.Contains(out, key.Secret) {
		t.Fatalf("apikeys list: %d\n%s", code, out)
	}
	t.Setenv("MYRIARCH_ADMIN_TOKEN", key.Secret)
	if code, out, errs := cli("", "agents", "list"); code != 0 || !strings.HasPrefix(out, "INSTANCE UID") {
		t.Fatalf("agents list with a viewer key: %d %s %s", code, out, errs)
	}
	if code, _, errs := cli("", "token", "create", "--name", "x"); code != 3 || !strings.Contains(errs, "403") || !strings.Contains(errs, "admin role") {
		t.Fatalf("token create with a viewer key: %d %s", code, errs)
	}
	t.Setenv("MYRIARCH_ADMIN_TOKEN", "")
	if code, _, errs := cli("", "apikeys", "delete", key.ID); code != 0 {
		t.Fatalf("apikeys delete: %d %s", code, errs)
	}
	t.Setenv("MYRIARCH_ADMIN_TOKEN", key.Secret)
	if code, _, errs := cli("", "agents", "list"); code != 3 || !strings.Contains(errs, "was revoked") {
		t.Fatalf("a revoked key: %d %s", code, errs)
	}
}
