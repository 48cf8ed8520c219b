package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/agent/hostinfo"
	"github.com/myriarch/myriarch/agent/updater"
	"github.com/myriarch/myriarch/internal/buildinfo"
)

var update = flag.Bool("update", false, "rewrite golden files")

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// fixtureConfig writes testdata/inspect/updater.yaml.tmpl with its absolute
// paths filled in.
func fixtureConfig(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata/inspect")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := os.ReadFile(filepath.Join(dir, "updater.yaml.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "updater.yaml")
	if err := os.WriteFile(path, bytes.ReplaceAll(tmpl, []byte("TESTDATA"), []byte(dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInspectGolden(t *testing.T) {
	code, stdout, stderr := runCmd(t, "inspect", "--config", fixtureConfig(t))
	if code != 0 || stderr != "" {
		t.Fatalf("inspect exit %d, stderr:\n%s", code, stderr)
	}
	// Exactly the documented shape, nothing more.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatalf("inspect output is not JSON: %v\n%s", err, stdout)
	}
	if len(raw) != 4 || raw["instanceUid"] == nil || raw["identifying"] == nil || raw["nonIdentifying"] == nil || raw["capabilities"] == nil {
		t.Fatalf("top-level keys = %v", keys(raw))
	}
	var d updater.Description
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	// Host-dependent values must be this host's; they are masked for the golden.
	host, err := hostinfo.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"host.name": host.HostName, "host.arch": host.Arch, "os.type": host.OSType, "os.description": host.OSDescription} {
		if d.NonIdentifying[k] != want {
			t.Errorf("%s = %q, want %q", k, d.NonIdentifying[k], want)
		}
		d.NonIdentifying[k] = "<" + k + ">"
	}
	if d.Identifying["service.version"] != buildinfo.Version {
		t.Errorf("service.version = %q", d.Identifying["service.version"])
	}
	d.Identifying["service.version"] = "<version>"
	var buf bytes.Buffer
	if err := writeJSON(&buf, d); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	golden := "testdata/inspect/golden.json"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("inspect output differs from %s:\n got: %s\nwant: %s", golden, got, want)
	}
}

func keys(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestInspectWarnsAboutMalformedState(t *testing.T) {
	dir := t.TempDir()
	storage := filepath.Join(dir, "supervisor")
	if err := os.MkdirAll(storage, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(storage, "persistent_state.yaml"), []byte("instance_id: nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "updater.yaml")
	body := "server: {endpoint: ws://127.0.0.1:4320/v1/opamp, token: t}\nsupervisor: {storage_dir: " + storage + "}\nstate_dir: " + filepath.Join(dir, "state") + "\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "inspect", "--config", cfg)
	if code != 0 || !strings.Contains(stderr, "not a UUID") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if strings.Contains(stdout, updater.AttrCollectorInstanceUID) {
		t.Errorf("collector UID reported from a malformed state:\n%s", stdout)
	}
}

func TestValidate(t *testing.T) {
	code, stdout, _ := runCmd(t, "validate", "--config", fixtureConfig(t))
	if code != 0 || !strings.Contains(stdout, "valid") {
		t.Errorf("valid config: exit %d, %q", code, stdout)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	body := "server:\n  endpoint: ftp://x\n  tokn: t\nmode: vm\ncollector:\n  health_window: soon\n"
	if err := os.WriteFile(bad, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd(t, "validate", "--config", bad)
	if code != 1 {
		t.Errorf("bad config: exit %d", code)
	}
	for _, want := range []string{
		"server.endpoint (line 2)",
		"server.tokn (line 3): unknown key",
		"mode (line 4)",
		"collector.health_window (line 6)",
		"server.token: required",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("validate output lacks %q:\n%s", want, stderr)
		}
	}

	code, _, stderr = runCmd(t, "validate", "--config", filepath.Join(t.TempDir(), "missing.yaml"))
	if code != 1 || !strings.Contains(stderr, "missing.yaml") {
		t.Errorf("missing config: exit %d, %q", code, stderr)
	}
}

func TestUsageAndVersion(t *testing.T) {
	if code, stdout, _ := runCmd(t, "version"); code != 0 || stdout != "myriarch-updater "+buildinfo.Version+"\n" {
		t.Errorf("version: %d %q", code, stdout)
	}
	for _, args := range [][]string{{}, {"frobnicate"}, {"validate", "--nope"}, {"inspect", "--watch"}, {"run", "extra"}} {
		if code, _, _ := runCmd(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// TestEnvironmentWithoutAFile is a container's configuration: no file,
// MYRIARCH_* variables only; validate and inspect see what run would.
func TestEnvironmentWithoutAFile(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("from-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MYRIARCH_SERVER_ENDPOINT", "wss://opamp.example.com:4320/v1/opamp")
	t.Setenv("MYRIARCH_ENROLLMENT_TOKEN_FILE", token)
	t.Setenv("MYRIARCH_STATE_DIR", filepath.Join(dir, "state"))
	missing := filepath.Join(dir, "updater.yaml")

	code, stdout, stderr := runCmd(t, "validate", "--config", missing)
	if code != 0 || !strings.Contains(stdout, "config from the environment (no file "+missing+"): valid") ||
		!strings.Contains(stdout, "overridden by the environment: MYRIARCH_SERVER_ENDPOINT, MYRIARCH_ENROLLMENT_TOKEN_FILE, MYRIARCH_STATE_DIR") {
		t.Errorf("validate: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCmd(t, "inspect", "--config", missing)
	var d updater.Description
	if code != 0 || json.Unmarshal([]byte(stdout), &d) != nil || d.NonIdentifying[updater.AttrServerEndpoint] != "wss://opamp.example.com:4320/v1/opamp" {
		t.Errorf("inspect: exit %d\n%s%s", code, stdout, stderr)
	}

	t.Setenv("MYRIARCH_ENROLLMENT_TOKEN", "also")
	code, _, stderr = runCmd(t, "validate", "--config", missing)
	if code != 1 || !strings.Contains(stderr, "set only one of MYRIARCH_ENROLLMENT_TOKEN and MYRIARCH_ENROLLMENT_TOKEN_FILE") {
		t.Errorf("both token variables: exit %d, %q", code, stderr)
	}
}
