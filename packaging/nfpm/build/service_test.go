package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const myriarchdUnit = packaging + "/systemd/myriarchd.service"

// unitSettings reads a unit file's settings as "[Section]Key" -> values.
func unitSettings(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		default:
			k, v, _ := strings.Cut(line, "=")
			m[section+k] = append(m[section+k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// systemd-analyze verify loads the unit as systemd would (unknown keys, bad values and a
// missing ExecStart binary are reported); any output is a failure.
func TestMyriarchdUnitVerifies(t *testing.T) {
	sa := needTool(t, "systemd-analyze")
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "myriarchd"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(myriarchdUnit)
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(dir, "myriarchd.service")
	if err := os.WriteFile(unit, []byte(strings.ReplaceAll(string(b), "/opt/myriarch/bin/", bin+"/")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", "--man=no", unit).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

func TestMyriarchdUnitSettings(t *testing.T) {
	s := unitSettings(t, myriarchdUnit)
	want := []struct{ key, value string }{
		{"[Service]ExecStart", "/opt/myriarch/bin/myriarchd serve --config /etc/myriarch/myriarchd.yaml"},
		{"[Service]ExecReload", "/bin/kill -HUP $MAINPID"},
		{"[Service]User", "myriarch"},
		{"[Service]Group", "myriarch"},
		{"[Service]StateDirectory", "myriarch"},
		{"[Service]ReadWritePaths", "/var/lib/myriarch"},
		{"[Service]Restart", "on-failure"},
		{"[Service]NoNewPrivileges", "yes"},
		{"[Service]ProtectSystem", "strict"},
		{"[Service]ProtectHome", "yes"},
		{"[Service]PrivateTmp", "yes"},
		{"[Service]CapabilityBoundingSet", ""},
		{"[Service]AmbientCapabilities", ""},
		{"[Service]ProtectKernelTunables", "yes"},
		{"[Service]ProtectKernelModules", "yes"},
		{"[Service]ProtectKernelLogs", "yes"},
		{"[Service]ProtectControlGroups", "yes"},
		{"[Service]RestrictSUIDSGID", "yes"},
		{"[Service]LockPersonality", "yes"},
		{"[Service]RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"},
		{"[Install]WantedBy", "multi-user.target"},
	}
	for _, w := range want {
		if got := s[w.key]; !slices.Equal(got, []string{w.value}) {
			t.Errorf("%s=%q, want %q", w.key, got, w.value)
		}
	}
	// The server runs on any configuration; a condition would hide a broken one.
	for k := range s {
		if strings.HasPrefix(k, "[Unit]Condition") {
			t.Errorf("unexpected %s", k)
		}
	}
}

// The default configuration has exactly the server's configuration keys, and values that
// agree with the unit and the package.
func TestDefaultConfig(t *testing.T) {
	b, err := os.ReadFile(packaging + "/config/myriarchd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		t.Fatal("not a mapping")
	}
	got := map[string]string{}
	var keys []string
	m := doc.Content[0].Content
	for i := 0; i+1 < len(m); i += 2 {
		if m[i+1].Kind != yaml.ScalarNode {
			t.Errorf("%s: not a flat value", m[i].Value)
		}
		keys = append(keys, m[i].Value)
		got[m[i].Value] = m[i+1].Value
	}
	wantKeys := []string{"data_dir", "store", "listen", "admin_listen", "estate", "estate_poll", "tls_cert", "tls_key", "client_ca",
		"admin_token_file", "public_url", "heartbeat", "registrations_per_minute", "prune_after", "log_format", "log_level", "insecure_listen"}
	slices.Sort(keys)
	slices.Sort(wantKeys)
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("keys %v, want exactly %v", keys, wantKeys)
	}
	for k, v := range map[string]string{
		"data_dir":         "/var/lib/myriarch",
		"listen":           ":4320",
		"admin_listen":     "127.0.0.1:4321",
		"estate":           "/etc/myriarch/estate",
		"tls_cert":         "/etc/myriarch/tls/tls.crt",
		"tls_key":          "/etc/myriarch/tls/tls.key",
		"insecure_listen":  "false",
		"admin_token_file": "", // generated in data_dir; a named file must exist
	} {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}
