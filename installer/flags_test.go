//go:build linux

package installer_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// Each class of bad input is refused with a message naming the flag, exit status 2, and
// nothing written.
func TestBadFlagsAreRefused(t *testing.T) {
	a := completeArtifacts(t, "0.149.0")
	emptyToken := filepath.Join(t.TempDir(), "empty")
	write(t, emptyToken, []byte("\n"), 0o600)
	badToken := filepath.Join(t.TempDir(), "bad")
	write(t, badToken, []byte("has space\n"), 0o600)
	keyFile := filepath.Join(t.TempDir(), "minisign.pub")
	write(t, keyFile, []byte("untrusted comment: not a key\nhello\n"), 0o644)

	cases := []struct {
		name string
		edit func(flags []string) []string
		want string
	}{
		{"unknown flag", func(f []string) []string { return append(f, "--colour", "red") }, "--colour: unknown flag"},
		{"missing value", func(f []string) []string { return append(f, "--site-region") }, "--site-region: missing value"},
		{"flag as value", func(f []string) []string { return withFlag(f, "--site-id", "--site-type") }, "--site-id: missing value"},
		{"switch with value", func(f []string) []string { return append(f, "--no-start=yes") }, "--no-start: takes no value"},
		{"no server", func(f []string) []string { return withoutFlag(f, "--server") }, "--server is required"},
		{"server scheme", func(f []string) []string { return withFlag(f, "--server", "ftp://127.0.0.1/") }, "must be a ws://, wss://, http:// or https:// URL"},
		{"server without host", func(f []string) []string { return withFlag(f, "--server", "wss:///v1/opamp") }, "has no host"},
		{"server with space", func(f []string) []string { return withFlag(f, "--server", "ws://a b/") }, "must not contain spaces"},
		{"no token", func(f []string) []string { return withoutFlag(f, "--token-file") }, "--token or --token-file is required"},
		{"both tokens", func(f []string) []string { return append(f, "--token", "abc") }, "give only one of them"},
		{"empty token", func(f []string) []string { return append(withoutFlag(f, "--token-file"), "--token=") }, "--token: the token is empty"},
		{"empty token file", func(f []string) []string { return withFlag(f, "--token-file", emptyToken) }, "the token is empty"},
		{"unreadable token file", func(f []string) []string { return withFlag(f, "--token-file", "/nonexistent/token") }, "not a readable file"},
		{"token characters", func(f []string) []string { return withFlag(f, "--token-file", badToken) }, "characters not allowed in a bearer token"},
		{"no site id", func(f []string) []string { return withoutFlag(f, "--site-id") }, "--site-id is required"},
		{"site id with newline", func(f []string) []string { return withFlag(f, "--site-id", "a\nb") }, "--site-id: must be one line"},
		{"dollar", func(f []string) []string { return withFlag(f, "--site-name", "${env:HOME}") }, "must not contain $"},
		{"too long", func(f []string) []string { return withFlag(f, "--site-region", strings.Repeat("x", 300)) }, "--site-region: longer than 256"},
		{"site type case", func(f []string) []string { return withFlag(f, "--site-type", "Edge") }, `--site-type "Edge": must be lower case (edge)`},
		{"no site type", func(f []string) []string { return withoutFlag(f, "--site-type") }, "--site-type is required"},
		{"country case", func(f []string) []string { return withFlag(f, "--site-country", "de") }, `--site-country "de": must be upper case (DE)`},
		{"country unknown", func(f []string) []string { return withFlag(f, "--site-country", "XX") }, "not an ISO 3166-1 alpha-2 country code"},
		{"country name", func(f []string) []string { return withFlag(f, "--site-country", "Germany") }, "must be an ISO 3166-1 alpha-2 code"},
		{"timezone unknown", func(f []string) []string { return withFlag(f, "--site-timezone", "Europe/Atlantis") }, "not an IANA time zone"},
		{"timezone path", func(f []string) []string { return withFlag(f, "--site-timezone", "../../etc/passwd") }, "not an IANA time zone"},
		{"timezone table", func(f []string) []string { return withFlag(f, "--site-timezone", "zone.tab") }, "not an IANA time zone"},
		{"no environment", func(f []string) []string { return withoutFlag(f, "--environment") }, "--environment is required"},
		{"mode", func(f []string) []string { return withFlag(f, "--mode", "k8s") }, `--mode "k8s": must be binary or container`},
		{"no version", func(f []string) []string { return withoutFlag(f, "--collector-version") }, "--collector-version is required"},
		{"version", func(f []string) []string { return withFlag(f, "--collector-version", "latest") }, "must be a version like 0.149.0"},
		{"no artifacts", func(f []string) []string { return withoutFlag(f, "--artifacts") }, "--artifacts is required"},
		{"artifacts dir", func(f []string) []string { return withFlag(f, "--artifacts", "/nonexistent") }, "no such directory"},
		{"artifacts scheme", func(f []string) []string { return withFlag(f, "--artifacts", "ftp://127.0.0.1/x") }, "only http:// and https://"},
		{"no key", func(f []string) []string { return withoutFlag(f, "--minisign-key") }, "--minisign-key is required"},
		{"mirror URL", func(f []string) []string {
			return append(f, "--catalog-mirrors", "ok.example.com,https://x.example.com/a")
		},
			`--catalog-mirrors "https://x.example.com/a": a host, host:port or *.example.com, not a URL`},
		{"mirror wildcard", func(f []string) []string { return append(f, "--catalog-mirrors", "*example.com") }, "not a URL"},
		{"bad key", func(f []string) []string { return withFlag(f, "--minisign-key", "RWnotakey") }, "not a minisign public key"},
		{"bad key file", func(f []string) []string { return withFlag(f, "--minisign-key", keyFile) }, "not a minisign public key"},
		{"bad root key", func(f []string) []string { return append(f, "--root-key", "RWnotakey") },
			"--root-key: not a minisign public key (RW followed by 54 base64 characters) nor a file holding one"},
		{"bad root key file", func(f []string) []string { return append(f, "--root-key", keyFile) }, "--root-key: not a minisign public key"},
		{"missing root key file", func(f []string) []string { return append(f, "--root-key", "/nonexistent/root.pub") },
			"--root-key: not a minisign public key"},
		{"empty root key", func(f []string) []string { return append(f, "--root-key=") }, "--root-key: not a minisign public key"},
		{"root key without value", func(f []string) []string { return append(f, "--root-key") }, "--root-key: missing value"},
		{"purge without uninstall", func(f []string) []string { return append(f, "--purge") }, "--purge only goes with --uninstall"},
		{"root without no-start", func(f []string) []string { return withoutFlag(f, "--no-start") }, "--root needs --no-start"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := filepath.Join(t.TempDir(), "root")
			r := runScript(t, c.edit(siteFlags(t, a, root))...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2:\n%s", r.code, r)
			}
			if !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "nothing was changed") {
				t.Errorf("stderr lacks %q:\n%s", c.want, r)
			}
			assertNotCreated(t, root)
		})
	}
}

// All problems are reported by one run, not one per run.
func TestBadFlagsAreAllReportedAtOnce(t *testing.T) {
	a := completeArtifacts(t, "0.149.0")
	root := filepath.Join(t.TempDir(), "root")
	flags := siteFlags(t, a, root)
	flags = withFlag(flags, "--server", "tcp://127.0.0.1")
	flags = withFlag(flags, "--site-type", "Edge")
	flags = withFlag(flags, "--site-country", "de")
	flags = withFlag(flags, "--site-timezone", "Mars/Olympus")
	flags = withFlag(flags, "--mode", "vm")
	flags = withoutFlag(flags, "--environment")
	flags = append(flags, "--bogus", "--root-key", "RWnotakey")
	r := runScript(t, flags...)
	if r.code != 2 {
		t.Errorf("exit %d, want 2", r.code)
	}
	want := []string{"8 problems, nothing was changed", "--server \"tcp://127.0.0.1\"", "--site-type \"Edge\"",
		"--site-country \"de\"", "--site-timezone \"Mars/Olympus\"", "--mode \"vm\"", "--environment is required",
		"--bogus: unknown flag", "--root-key: not a minisign public key"}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r)
		}
	}
	assertNotCreated(t, root)
}

// Over an existing install, bad flags change nothing either.
func TestBadFlagsOverAnInstallChangeNothing(t *testing.T) {
	needMinisign(t)
	a := completeArtifacts(t, "0.149.0")
	root := filepath.Join(t.TempDir(), "root")
	flags := siteFlags(t, a, root)
	if r := runScript(t, flags...); r.code != 0 {
		t.Fatalf("install failed:\n%s", r)
	}
	before := snapshot(t, root)
	if r := runScript(t, withFlag(flags, "--site-country", "de")...); r.code != 2 {
		t.Errorf("want exit 2:\n%s", r)
	}
	if d := diffSnapshots(before, snapshot(t, root)); len(d) != 0 {
		t.Errorf("bad flags changed the install: %v", d)
	}
}

func TestGoodVariantsAreAccepted(t *testing.T) {
	a := completeArtifacts(t, "0.149.0")
	rootKey, rootKeyFile := newRootKey(t)
	cases := []struct {
		name string
		edit func(flags []string) []string
	}{
		{"equals syntax", func(f []string) []string {
			return append(withoutFlag(f, "--site-id"), "--site-id=00042")
		}},
		{"key file", func(f []string) []string {
			p := filepath.Join(t.TempDir(), "minisign.pub")
			write(t, p, []byte(a.publicKeyFile), 0o644)
			return withFlag(f, "--minisign-key", p)
		}},
		{"token flag", func(f []string) []string { return append(withoutFlag(f, "--token-file"), "--token", testToken) }},
		{"root key", func(f []string) []string { return append(f, "--root-key", rootKey) }},
		{"root key equals syntax", func(f []string) []string { return append(f, "--root-key="+rootKey) }},
		{"root key file", func(f []string) []string {
			p := filepath.Join(t.TempDir(), "root.pub")
			write(t, p, []byte(rootKeyFile), 0o644)
			return append(f, "--root-key", p)
		}},
		{"https with path", func(f []string) []string { return withFlag(f, "--server", "https://127.0.0.1:8443/opamp") }},
		{"http URL artifacts", func(f []string) []string { return withFlag(f, "--artifacts", "http://127.0.0.1:1/x/") }},
		{"UTC", func(f []string) []string { return withFlag(f, "--site-timezone", "UTC") }},
		{"no optional names", func(f []string) []string { return withoutFlag(withoutFlag(f, "--site-name"), "--site-region") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			r := runScript(t, append(c.edit(siteFlags(t, a, root)), "--dry-run")...)
			if r.code != 0 {
				t.Errorf("refused:\n%s", r)
			}
			assertNotCreated(t, root)
		})
	}
}

func TestHelp(t *testing.T) {
	r := runScript(t, "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "--site-timezone TZ") || !strings.Contains(r.stdout, "[--root-key KEY|FILE]") {
		t.Errorf("--help:\n%s", r)
	}
}
