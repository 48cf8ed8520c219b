//go:build linux

package installer_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/agent/sitesetup"

	"github.com/myriarch/myriarch/agent/config"
)

// The updater configuration install.sh writes is accepted by the updater's own strict
// loader (unknown keys and bad values are errors there), in both modes, with and without
// a root key.
func TestUpdaterAcceptsWrittenConfig(t *testing.T) {
	needMinisign(t)
	a := completeArtifacts(t, "0.149.0")
	rootKey, _ := newRootKey(t)
	cases := []struct {
		name, mode, rootKey string
	}{
		{"binary", "binary", ""},
		{"container", "container", ""},
		{"binary with root key", "binary", rootKey},
		{"container with root key", "container", rootKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			flags := siteFlags(t, a, root)
			if c.mode == "container" {
				flags = withFlag(withoutFlag(flags, "--collector-version"), "--mode", "container")
			}
			if c.rootKey != "" {
				flags = append(flags, "--root-key", c.rootKey)
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
			if string(cfg.Mode) != c.mode {
				t.Errorf("mode = %q, want %q", cfg.Mode, c.mode)
			}
			tok, err := config.ReadToken(cfg.Server.TokenFile)
			if err != nil || tok != testToken {
				t.Errorf("token from %s = %q, %v", cfg.Server.TokenFile, tok, err)
			}
			if !slices.Equal(cfg.Trust.MinisignPublicKeys, []string{a.publicKey}) {
				t.Errorf("trust.minisign_public_keys = %q, want the --minisign-key", cfg.Trust.MinisignPublicKeys)
			}
			var wantRoots []string
			if c.rootKey != "" {
				wantRoots = []string{c.rootKey}
			}
			if !slices.Equal(cfg.Trust.RootKeys, wantRoots) {
				t.Errorf("trust.root_keys = %q, want %q", cfg.Trust.RootKeys, wantRoots)
			}
			if !cfg.Trust.RequireSignature {
				t.Error("trust.require_signature is off")
			}
		})
	}
}

// --root-key (the key or its .pub file) puts trust.root_keys beside
// minisign_public_keys; the rest of updater.yaml is what it is without the flag, which
// writes no root_keys at all (install-binary.golden).
func TestRootKeyWritten(t *testing.T) {
	needMinisign(t)
	a := completeArtifacts(t, "0.149.0")
	rootKey, rootKeyFile := newRootKey(t)
	pubFile := filepath.Join(t.TempDir(), "root.pub")
	write(t, pubFile, []byte(rootKeyFile), 0o644)

	plain := filepath.Join(t.TempDir(), "root")
	if r := runScript(t, siteFlags(t, a, plain)...); r.code != 0 {
		t.Fatalf("install failed:\n%s", r)
	}
	without := readFile(t, filepath.Join(plain, "etc/myriarch/updater.yaml"))
	if strings.Contains(without, "root_keys") {
		t.Errorf("updater.yaml names root_keys without --root-key:\n%s", without)
	}

	for name, value := range map[string]string{"key": rootKey, "file": pubFile} {
		t.Run(name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			if r := runScript(t, append(siteFlags(t, a, root), "--root-key", value)...); r.code != 0 {
				t.Fatalf("install failed:\n%s", r)
			}
			got := readFile(t, filepath.Join(root, "etc/myriarch/updater.yaml"))
			golden(t, "updater-root-key.golden", strings.NewReplacer(root, "@ROOT@", a.publicKey, "@MINISIGN_KEY@",
				rootKey, "@ROOT_KEY@").Replace(got))
			block := "  root_keys:\n    - \"" + rootKey + "\"\n"
			if strings.Replace(got, block, "", 1) != strings.ReplaceAll(without, plain, root) {
				t.Errorf("with --root-key, updater.yaml differs by more than the root_keys block:\n%s", got)
			}
		})
	}
}

// Adding or removing the root key rewrites only updater.yaml, so only the updater would be
// restarted; without it again the file is byte for byte what it was.
func TestRootKeyChangesOnlyTheUpdaterConfig(t *testing.T) {
	needMinisign(t)
	a := completeArtifacts(t, "0.149.0")
	rootKey, _ := newRootKey(t)
	root := filepath.Join(t.TempDir(), "root")
	flags := siteFlags(t, a, root)
	if r := runScript(t, flags...); r.code != 0 {
		t.Fatalf("install failed:\n%s", r)
	}
	path := filepath.Join(root, "etc/myriarch/updater.yaml")
	original := readFile(t, path)
	want := []string{"changed etc/myriarch", "changed etc/myriarch/updater.yaml"}
	for _, step := range []struct {
		name  string
		flags []string
	}{
		{"adding --root-key", append(slices.Clone(flags), "--root-key", rootKey)},
		{"removing --root-key", flags},
	} {
		before := snapshot(t, root)
		r := runScript(t, step.flags...)
		if r.code != 0 {
			t.Fatalf("%s failed:\n%s", step.name, r)
		}
		if d := diffSnapshots(before, snapshot(t, root)); !slices.Equal(d, want) {
			t.Errorf("%s: changes = %v, want %v", step.name, d, want)
		}
		if !strings.Contains(r.stdout, "changed, a running service needs a restart: myriarch-updater\n") {
			t.Errorf("%s: want only myriarch-updater to need a restart:\n%s", step.name, r)
		}
	}
	if got := readFile(t, path); got != original {
		t.Errorf("without --root-key again, updater.yaml is not what it was:\n%s\nwas:\n%s", got, original)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
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
	// install.ps1's configuration is written by myriarch-updater setup.
	win := sitesetup.UpdaterYAML(&sitesetup.Settings{Mode: "binary"}, sitesetup.NewLayout(`C:\site`))
	if want := "trust:\n" + strings.Join(policy, "\n") + "\n"; !strings.Contains(win, want) {
		t.Errorf("myriarch-updater setup's updater.yaml does not document going back under trust:\n%s", win)
	}
}
