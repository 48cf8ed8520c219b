//go:build linux

package installer_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// The trust section both installers write documents the downgrade policy
// the updater applies, in the same words.
func TestWrittenConfigDocumentsGoingBack(t *testing.T) {
	needMinisign(t)
	policy := []string{
		"  # Going back to a collector version this host ran and confirmed healthy is allowed;",
		"  # an older version it never confirmed is refused unless allow_downgrade: true.",
	}
	a := completeArtifacts(t, "0.149.0")
	root := filepath.Join(t.TempDir(), "root")
	if r := runScript(t, siteFlags(t, a, root)...); r.code != 0 {
		t.Fatalf("install failed:\n%s", r)
	}
	b, err := os.ReadFile(filepath.Join(root, "etc/myriarch/updater.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "trust:\n" + strings.Join(policy, "\n") + "\n"; !strings.Contains(string(b), want) {
		t.Errorf("install.sh's updater.yaml does not document going back under trust:\n%s", b)
	}
	ps1, err := os.ReadFile("install.ps1")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range policy {
		if !strings.Contains(string(ps1), "'"+line+"'") {
			t.Errorf("install.ps1 does not write %q", line)
		}
	}
}
