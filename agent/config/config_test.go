package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/yamlstrict"
)

const minimal = "server:\n  endpoint: ws://127.0.0.1:4320/v1/opamp\n  token: t\n"

func TestLoadFull(t *testing.T) {
	cfg, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Supervisor.Control != ControlProcess || len(cfg.Supervisor.Command) != 3 {
		t.Errorf("supervisor = %+v", cfg.Supervisor)
	}
	if cfg.Collector.HealthWindow != 45*time.Second || cfg.Collector.MaxPackageSize != 512<<20 {
		t.Errorf("collector = %+v", cfg.Collector)
	}
	if cfg.Log.Format != "json" || cfg.Server.Token != "secret-token" {
		t.Errorf("log/server = %+v %+v", cfg.Log, cfg.Server)
	}
}

func TestDefaultsFilledIn(t *testing.T) {
	cfg, problems := Parse([]byte(minimal))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	want := NewDefaultConfig()
	want.Server.Endpoint, want.Server.Token = "ws://127.0.0.1:4320/v1/opamp", "t"
	if cfg.Mode != "binary" || cfg.Collector.MaxPackageSize != 1<<30 || cfg.Collector.HealthWindow != 30*time.Second ||
		cfg.Supervisor.Service != "opampsupervisor" || !cfg.Trust.RequireSignature || cfg.Log.Level != "info" {
		t.Errorf("defaults not applied: %+v", cfg)
	}
}

func TestNewDefaultConfigOnlyLacksServer(t *testing.T) {
	err := NewDefaultConfig().Validate()
	if err == nil {
		t.Fatal("default config without endpoint validated")
	}
	for _, e := range yamlstrict.Flatten(err) {
		var fe *FieldError
		if !errors.As(e, &fe) || !strings.HasPrefix(fe.Path, "server.") {
			t.Errorf("unexpected default-config problem: %v", e)
		}
	}
}

func TestBadConfigs(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty-token")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		yaml string
		want []string // each must appear in one problem, in this order
	}{
		{"unknown top-level key", minimal + "modee: binary\n", []string{"modee (line 4): unknown key (did you mean \"mode\"?)"}},
		{"unknown nested key", minimal + "collector:\n  packag: x\n", []string{"collector.packag (line 5): unknown key"}},
		{"unknown tls key", "server:\n  endpoint: wss://h/v1/opamp\n  token: t\n  tls: {ca: x}\n", []string{"server.tls.ca (line 4): unknown key"}},
		{"bad scheme", "server:\n  endpoint: ftp://h/x\n  token: t\n", []string{"server.endpoint (line 2): scheme must be ws, wss, http or https"}},
		{"missing endpoint", "server:\n  token: t\n", []string{"server.endpoint: required"}},
		{"token and token_file", "server:\n  endpoint: ws://h/v1/opamp\n  token: t\n  token_file: /x\n", []string{"server.token (line 3): set only one"}},
		{"no credential", "server:\n  endpoint: ws://h/v1/opamp\n", []string{"server.token: required"}},
		{"empty token file", "server:\n  endpoint: ws://h/v1/opamp\n  token_file: " + empty + "\n", []string{"server.token_file (line 3): token file", "is empty"}},
		{"missing token file", "server:\n  endpoint: ws://h/v1/opamp\n  token_file: /nonexistent/token\n", []string{"server.token_file (line 3): cannot read token file"}},
		{"cert without key", minimal + "  tls: {cert_file: " + empty + "}\n", []string{"server.tls (line 4): cert_file and key_file must be set together"}},
		{"bad mode", minimal + "mode: vm\n", []string{"mode (line 4): must be \"binary\" or \"container\""}},
		{"bad control", minimal + "supervisor:\n  control: magic\n", []string{"supervisor.control (line 5): must be"}},
		{"process without command", minimal + "supervisor:\n  control: process\n", []string{"supervisor.command: required when supervisor.control is \"process\""}},
		{"service without name", minimal + "supervisor:\n  service: \"\"\n", []string{"supervisor.service (line 5): required"}},
		{"relative storage dir", minimal + "supervisor:\n  storage_dir: var/lib\n", []string{"supervisor.storage_dir (line 5): must be an absolute path"}},
		{"bad duration", minimal + "collector:\n  health_window: soon\n", []string{"collector.health_window (line 5): invalid value \"soon\": expected a duration"}},
		{"negative duration", minimal + "collector:\n  health_window: -5s\n", []string{"collector.health_window (line 5): must be positive"}},
		{"bad size", minimal + "collector:\n  max_package_size: lots\n", []string{"collector.max_package_size (line 5): invalid size \"lots\""}},
		{"executable path", minimal + "collector:\n  executable: bin/otelcol\n", []string{"collector.executable (line 5): must be a file name"}},
		{"bool expected", minimal + "trust:\n  require_signature: maybe\n", []string{"trust.require_signature (line 5): invalid value \"maybe\": expected true or false"}},
		{"list expected", minimal + "supervisor:\n  command: /bin/sup\n", []string{"supervisor.command (line 5): expected a list"}},
		{"mapping expected", minimal + "log: loud\n", []string{"log (line 4): expected a mapping"}},
		{"bad minisign key", minimal + "trust:\n  minisign_public_keys: [\"nope\"]\n", []string{"trust.minisign_public_keys[0] (line 5): not a minisign public key"}},
		{"bad keyring", minimal + "trust:\n  minisign_keys:\n    - {key: nope}\n    - {key: " + testKey + ", not_before: 2027-01-01T00:00:00Z, not_after: 2026-01-01T00:00:00Z}\n    - {key: " + testKey + ", not_after: soon}\n",
			[]string{"trust.minisign_keys[0].key (line 6): not a minisign public key", "trust.minisign_keys[1].not_after (line 7): must be after not_before (2027-01-01T00:00:00Z)",
				"trust.minisign_keys[2].not_after (line 8): invalid value \"soon\": expected an RFC 3339 time such as 2027-01-01T00:00:00Z"}},
		{"container without name", minimal + "mode: container\ncontainer: {name: \"\", docker_host: \"ftp://x\"}\n", []string{"container.name (line 5): required in container mode", "container.docker_host (line 5): must be"}},
		{"bad log level", minimal + "log: {level: loud, format: xml}\n", []string{"log.level (line 4): must be one of", "log.format (line 4): must be text or json"}},
		{"duplicate key", minimal + "mode: binary\nmode: container\n", []string{"mode (line 5): duplicate key"}},
		{"relative state dir", minimal + "state_dir: state\n", []string{"state_dir (line 4): must be an absolute path"}},
		{"unknown providers key", minimal + "providers:\n  nosuch: {}\n", []string{"providers.nosuch (line 5): unknown key"}},
		{"local_dynamic vars and items", minimal + "providers:\n  local_dynamic:\n    items: [{vars: {item: a}}]\n    vars: [{item: b}]\n",
			[]string{"providers.local_dynamic.vars (line 7): set only one of providers.local_dynamic.vars and providers.local_dynamic.items"}},
		{"local_dynamic vars not mappings", minimal + "providers:\n  local_dynamic:\n    vars: [key1]\n",
			[]string{"providers.local_dynamic.vars[0] (line 6): invalid value \"key1\": expected a mapping"}},
		{"invalid yaml", "server: [\n", []string{"invalid YAML"}},
		{"every problem at once", "server:\n  endpoint: ftp://x\n  bogus: 1\nmode: vm\nlog: {level: loud}\n",
			[]string{"server.endpoint (line 2)", "server.bogus (line 3): unknown key", "mode (line 4)", "log.level (line 5)", "server.token: required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "updater.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Load error = %v, want *config.Error", err)
			}
			var got []string
			for _, p := range ce.Problems {
				got = append(got, p.Error())
			}
			i := 0
			for _, w := range tt.want {
				for i < len(got) && !strings.Contains(got[i], w) {
					i++
				}
				if i == len(got) {
					t.Fatalf("problem %q not found (in order) in:\n%s", w, strings.Join(got, "\n"))
				}
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]ByteSize{"1GiB": 1 << 30, "500MB": 500e6, "1048576": 1 << 20, "2 KiB": 2048, "1.5GiB": 3 << 29} {
		got, err := ParseByteSize(in)
		if err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GiB", "-1", "1XB", "1e30TiB"} {
		if _, err := ParseByteSize(in); err == nil {
			t.Errorf("ParseByteSize(%q) accepted", in)
		}
	}
}

func TestBearerTokenFromFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte("  abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := ServerConfig{TokenFile: p}
	if tok, err := s.BearerToken(); err != nil || tok != "abc" {
		t.Fatalf("BearerToken = %q, %v", tok, err)
	}
}
