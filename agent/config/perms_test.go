//go:build unix

package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFilePermissions: a configuration or token file other users may
// change is refused; secrets readable by others and a trust policy that
// refuses every offer are warned about.
func TestFilePermissions(t *testing.T) {
	const key = "RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"
	write := func(t *testing.T, name, content string, mode os.FileMode) string {
		p := filepath.Join(t.TempDir(), name)
		os.WriteFile(p, []byte(content), 0o600)
		os.Chmod(p, mode)
		return p
	}
	withToken := func(line string) string {
		return "server:\n  endpoint: ws://127.0.0.1:4320/v1/opamp\n  " + line + "\ntrust:\n  minisign_public_keys: [" + key + "]\n"
	}
	for _, tc := range []struct {
		name        string
		config      func(t *testing.T) string
		wantErr     string
		wantWarning string
	}{
		{name: "world-writable config (0666)", config: func(t *testing.T) string {
			return write(t, "u.yaml", withToken("token: t"), 0o666)
		}, wantErr: "other users could change what the updater installs"},
		{name: "world-writable token file (0777)", config: func(t *testing.T) string {
			return write(t, "u.yaml", withToken("token_file: "+write(t, "tok", "t\n", 0o777)), 0o600)
		}, wantErr: "server.token_file (line 3): "},
		{name: "inline token in a config others can read (0644)", config: func(t *testing.T) string {
			return write(t, "u.yaml", withToken("token: t"), 0o644)
		}, wantWarning: "server.token: the token is inline"},
		{name: "token file others can read", config: func(t *testing.T) string {
			return write(t, "u.yaml", withToken("token_file: "+write(t, "tok", "t\n", 0o644)), 0o600)
		}, wantWarning: "can be read by other users"},
		{name: "signatures required, no key (the default)", config: func(t *testing.T) string {
			return write(t, "u.yaml", "server:\n  endpoint: ws://127.0.0.1:4320/v1/opamp\n  token: t\n", 0o600)
		}, wantWarning: "every package offer will be refused"},
		{name: "private files, a key", config: func(t *testing.T) string {
			return write(t, "u.yaml", withToken("token_file: "+write(t, "tok", "t\n", 0o600)), 0o600)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.config(t)
			cfg, err := LoadEnv(path, func(string) (string, bool) { return "", false })
			if tc.wantErr != "" {
				var e *Error
				if !errors.As(err, &e) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "chmod go-w") {
					t.Fatalf("got %v, want a refusal naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			warnings := strings.Join(Warnings(path, cfg), "\n")
			if tc.wantWarning == "" && warnings != "" || !strings.Contains(warnings, tc.wantWarning) {
				t.Errorf("warnings %q, want %q", warnings, tc.wantWarning)
			}
		})
	}
}

func TestDownloadHostsValidated(t *testing.T) {
	_, problems := Parse([]byte(minimal + "trust:\n  download_hosts: [opamp.example.com, \"*.cdn.example.com:443\", \"https://x.example.com/a\"]\n"))
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "trust.download_hosts[2] (line 5)") {
		t.Fatalf("problems %v, want one naming trust.download_hosts[2]", problems)
	}
	_, problems = Parse([]byte(minimal + "trust:\n  telemetry_hosts: [otlp.example.com, \"http://otlp.example.com/v1\"]\n"))
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "trust.telemetry_hosts[1] (line 5)") {
		t.Fatalf("problems %v, want one naming trust.telemetry_hosts[1]", problems)
	}
	cfg, problems := Parse([]byte(minimal + "trust:\n  download_hosts: [opamp.example.com]\n"))
	if len(problems) != 0 || len(cfg.Trust.HostPatterns()) != 1 {
		t.Fatalf("%v %v", problems, cfg.Trust.HostPatterns())
	}
}
