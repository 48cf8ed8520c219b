package estate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const edgeFleetFile = "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: data-flow/gw\n"

// A webhook file names its URL, its secret's file, its events and
// optionally its fleets; the secret is read at load.
func TestWebhooksLoad(t *testing.T) {
	dir := t.TempDir()
	secrets := t.TempDir()
	os.WriteFile(filepath.Join(secrets, "ops"), []byte("  s3cret-s3cret-s3cret\n"), 0o600)
	writeTree(t, dir, map[string]string{
		"teams/data-flow/blueprints/gw.yaml": blueprintYAML,
		"fleets/edge.yaml":                   edgeFleetFile,
		"notifications/ops.yaml": "url: https://hooks.example.com/myriarch?team=ops\nsecretFile: " + filepath.Join(secrets, "ops") +
			"\nevents: [config_failed, rollout_paused]\nfleets: [edge]\n",
		"notifications/all.yml": "url: http://127.0.0.1:9/all\nsecretFile: hooks/all.secret\nevents: [estate_reload_failed]\n",
		"hooks/all.secret":      "0123456789abcdef",
	})
	e, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Webhooks) != 2 || e.Webhooks[0].Name != "all" || e.Webhooks[1].Name != "ops" {
		t.Fatalf("webhooks %+v", e.Webhooks)
	}
	ops := e.Webhooks[1]
	if string(ops.Secret) != "s3cret-s3cret-s3cret" || string(e.Webhooks[0].Secret) != "0123456789abcdef" {
		t.Fatalf("secrets %q %q", ops.Secret, e.Webhooks[0].Secret)
	}
	for _, tc := range []struct {
		w            *Webhook
		event, fleet string
		want         bool
	}{
		{&ops, EventConfigFailed, "edge", true},
		{&ops, EventConfigFailed, "other", false},
		{&ops, EventConfigFailed, "", false},
		{&ops, EventOfferFailed, "edge", false},
		{&e.Webhooks[0], EventEstateReloadFailed, "", true},
		{&e.Webhooks[0], EventEstateReloadFailed, "edge", true},
	} {
		if got := tc.w.Wants(tc.event, tc.fleet); got != tc.want {
			t.Errorf("%s wants %s of %q: %v", tc.w.Name, tc.event, tc.fleet, got)
		}
	}
}

// Every bad webhook file is a problem with its file and line, and the
// load fails (the server keeps the estate in force).
func TestBadWebhooks(t *testing.T) {
	secrets := t.TempDir()
	good := filepath.Join(secrets, "good")
	os.WriteFile(good, []byte("0123456789abcdef\n"), 0o600)
	os.WriteFile(filepath.Join(secrets, "short"), []byte("abc\n"), 0o600)
	os.WriteFile(filepath.Join(secrets, "big"), []byte(strings.Repeat("x", 5000)), 0o600)
	os.Mkdir(filepath.Join(secrets, "dir"), 0o700)
	hook := func(url, secret, events string) string {
		return "url: " + url + "\nsecretFile: " + secret + "\nevents: " + events + "\n"
	}
	for _, tc := range []struct {
		name, file, want string
	}{
		{"ftp", hook("ftp://example.com/x", good, "[config_failed]"), `notifications/h.yaml:1: url "ftp://example.com/x": the scheme must be http or https`},
		{"no scheme", hook("example.com/x", good, "[config_failed]"), `the scheme must be http or https`},
		{"no host", hook("https:///x", good, "[config_failed]"), `has no host`},
		{"credentials", hook("https://u:p@example.com/", good, "[config_failed]"), `carries user information`},
		{"no url", "secretFile: " + good + "\nevents: [config_failed]\n", `notifications/h.yaml:1: url is required`},
		{"missing secret", hook("https://example.com/", filepath.Join(secrets, "nope"), "[config_failed]"), `notifications/h.yaml:2: secretFile`},
		{"no secret", "url: https://example.com/\nevents: [config_failed]\n", `secretFile is required`},
		{"short secret", hook("https://example.com/", filepath.Join(secrets, "short"), "[config_failed]"), `holds 3 characters; a secret has at least 16`},
		{"big secret", hook("https://example.com/", filepath.Join(secrets, "big"), "[config_failed]"), `holds 5000 bytes; a secret is at most 4096`},
		{"secret is a directory", hook("https://example.com/", filepath.Join(secrets, "dir"), "[config_failed]"), `is not a regular file`},
		{"secret outside", hook("https://example.com/", "../../etc/passwd", "[config_failed]"), `leaves the estate directory`},
		{"unknown event", hook("https://example.com/", good, "[config_failed, agent_exploded]"), `notifications/h.yaml:3: unknown event "agent_exploded" (known: agent_offline, `},
		{"twice", hook("https://example.com/", good, "[config_failed, config_failed]"), `events lists "config_failed" twice`},
		{"no events", hook("https://example.com/", good, "[]"), `events is required`},
		{"unknown fleet", hook("https://example.com/", good, "[config_failed]") + "fleets: [edge, nowhere]\n", `notifications/h.yaml:4: fleet "nowhere" is not defined`},
		{"unknown field", hook("https://example.com/", good, "[config_failed]") + "secret: inline\n", `notifications/h.yaml:4: unknown field secret`},
		{"not a mapping", "- url: https://example.com/\n", `a notifications file is a mapping`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{
				"teams/data-flow/blueprints/gw.yaml": blueprintYAML,
				"fleets/edge.yaml":                   edgeFleetFile,
				"notifications/h.yaml":               tc.file,
			})
			_, err := loadWithin(t, dir)
			wantProblem(t, err, tc.want)
		})
	}
}
