//go:build linux

package installer_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/myriarch/myriarch/agent/config"
)

// The updater configuration install.sh writes is accepted by the updater's own strict
// loader (unknown keys and bad values are errors there), in both modes.
func TestUpdaterAcceptsWrittenConfig(t *testing.T) {
	needMinisign(t)
	a := completeArtifacts(t, "0.149.0")
	cases := map[string][]string{
		"binary":    nil,
		"container": {"--mode", "container"},
	}
	for name, extra := range cases {
		t.Run(name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			flags := siteFlags(t, a, root)
			if name == "container" {
				flags = withFlag(withoutFlag(flags, "--collector-version"), extra[0], extra[1])
			}
			if r := runScript(t, flags...); r.code != 0 {
				t.Fatalf("install failed:\n%s", r)
			}
			path := filepath.Join(root, "etc/myriarch/updater.yaml")
			cfg, err := config.Load(path)
			if err != nil {
				b, _ := os.ReadFile(path)
				t.Fatalf("updater rejects %s: %v\n%s", path, err, b)
			}
			if string(cfg.Mode) != name {
				t.Errorf("mode = %q, want %q", cfg.Mode, name)
			}
			tok, err := config.ReadToken(cfg.Server.TokenFile)
			if err != nil || tok != testToken {
				t.Errorf("token from %s = %q, %v", cfg.Server.TokenFile, tok, err)
			}
		})
	}
}

// The updater's downloads are confined to the server's host and the
// catalog mirrors given with --catalog-mirrors.
func TestDownloadHostsWritten(t *testing.T) {
	needMinisign(t)
	a := completeArtifacts(t, "0.149.0")
	for _, tc := range []struct {
		server, mirrors string
		want            []string
	}{
		{"wss://opamp.example.com:4320", "", []string{"opamp.example.com"}},
		{"ws://[::1]:4320/v1/opamp", "mirror.example.com,*.cdn.example.com:443", []string{"[::1]", "mirror.example.com", "*.cdn.example.com:443"}},
	} {
		root := filepath.Join(t.TempDir(), "root")
		flags := withFlag(siteFlags(t, a, root), "--server", tc.server)
		if tc.mirrors != "" {
			flags = append(flags, "--catalog-mirrors", tc.mirrors)
		}
		if r := runScript(t, flags...); r.code != 0 {
			t.Fatalf("install failed:\n%s", r)
		}
		cfg, err := config.Load(filepath.Join(root, "etc/myriarch/updater.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cfg.Trust.DownloadHosts, tc.want) {
			t.Errorf("--server %s --catalog-mirrors %q: download_hosts %q, want %q", tc.server, tc.mirrors, cfg.Trust.DownloadHosts, tc.want)
		}
	}
}
