//go:build linux

package installer_test

import (
	"bytes"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"aead.dev/minisign"
	"go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(testkit.RunChecked(m.Run))
}

func needMinisign(t *testing.T) {
	t.Helper()
	testenv.Tool(t, "minisign", "minisign")
}

// One fresh install, checked from several sides.
func TestFreshInstall(t *testing.T) {
	needMinisign(t)
	a := completeArtifacts(t, "0.149.0")
	root := filepath.Join(t.TempDir(), "root")
	r := runScript(t, siteFlags(t, a, root)...)
	if r.code != 0 {
		t.Fatalf("install failed:\n%s", r)
	}
	t.Run("golden tree", func(t *testing.T) {
		golden(t, "install-binary.golden", manifest(t, root, a.publicKey, "@MINISIGN_KEY@"))
		for _, w := range []string{"services not registered (--no-start)",
			"a running service needs a restart: otelcol-supervisor myriarch-updater\n"} {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("output lacks %q:\n%s", w, r)
			}
		}
	})
	t.Run("site attributes are strings", func(t *testing.T) { checkSiteAttributes(t, root, a) })
	t.Run("units are the packaged units", func(t *testing.T) { checkUnitsMatchPackaged(t, root) })
	t.Run("sigstore helper beside the updater", func(t *testing.T) { checkSigstoreHelper(t, root, a) })
}

// checkSigstoreHelper: the verified helper artifact is bin/myriarch-sigstore, 0755, in the
// updater's directory, where the updater looks for it.
func checkSigstoreHelper(t *testing.T, root string, a *artifactSet) {
	t.Helper()
	bin := filepath.Join(root, "opt/myriarch/bin")
	helper := filepath.Join(bin, "myriarch-sigstore")
	fi, err := os.Lstat(helper)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o755 {
		t.Errorf("%s: mode %v, want a regular file 0755", helper, fi.Mode())
	}
	got, err := os.ReadFile(helper)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(a.dir, sigstoreArtifact))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not the artifact %s", helper, sigstoreArtifact)
	}
	if _, err := os.Stat(filepath.Join(bin, "myriarch-updater")); err != nil {
		t.Errorf("the updater is not beside its helper: %v", err)
	}
}

// The supervisor and updater configurations are valid YAML with every site attribute a
// string, site.id keeping its leading zeros and the token only in 0600 files.
func checkSiteAttributes(t *testing.T, root string, a *artifactSet) {
	var sup struct {
		Server struct {
			Endpoint string            `yaml:"endpoint"`
			Headers  map[string]string `yaml:"headers"`
		} `yaml:"server"`
		Storage struct {
			Directory string `yaml:"directory"`
		} `yaml:"storage"`
		Agent struct {
			Executable  string `yaml:"executable"`
			Description struct {
				NonIdentifying map[string]any `yaml:"non_identifying_attributes"`
			} `yaml:"description"`
		} `yaml:"agent"`
		Capabilities map[string]bool `yaml:"capabilities"`
	}
	readYAML(t, filepath.Join(root, "etc/otelcol/supervisor.yaml"), &sup)
	want := map[string]any{
		"site.id": "007", "site.type": "edge", "site.name": `Edge "site" 7`, "site.country": "DE",
		"site.region": "north", "site.timezone": "Europe/Amsterdam", "deployment.environment.name": "production",
	}
	if len(sup.Agent.Description.NonIdentifying) != len(want) {
		t.Errorf("attributes = %v, want %v", sup.Agent.Description.NonIdentifying, want)
	}
	for k, v := range want {
		if got := sup.Agent.Description.NonIdentifying[k]; got != v {
			t.Errorf("attribute %s = %#v (%T), want the string %#v", k, got, got, v)
		}
	}
	if sup.Server.Endpoint != "ws://127.0.0.1:4320/v1/opamp" {
		t.Errorf("endpoint = %q", sup.Server.Endpoint)
	}
	if got := sup.Server.Headers["Authorization"]; got != "Bearer "+testToken {
		t.Errorf("Authorization header = %q", got)
	}
	if want := filepath.Join(root, "opt/myriarch/collector/current/otelcol-contrib"); sup.Agent.Executable != want {
		t.Errorf("agent.executable = %q, want %q", sup.Agent.Executable, want)
	}
	if sup.Storage.Directory != filepath.Join(root, "var/lib/otelcol/supervisor") {
		t.Errorf("storage.directory = %q", sup.Storage.Directory)
	}
	if !sup.Capabilities["accepts_remote_config"] || sup.Capabilities["accepts_packages"] {
		t.Errorf("capabilities = %v", sup.Capabilities)
	}
	// agent.executable resolves through current to the verified collector.
	out, err := exec.Command(sup.Agent.Executable, "--version").Output()
	if err != nil || !strings.Contains(string(out), "0.149.0") {
		t.Errorf("%s --version = %q, %v", sup.Agent.Executable, out, err)
	}

	var upd map[string]any
	readYAML(t, filepath.Join(root, "etc/myriarch/updater.yaml"), &upd)
	server := upd["server"].(map[string]any)
	if server["token_file"] != filepath.Join(root, "etc/myriarch/token") || server["token"] != nil {
		t.Errorf("updater server = %v: want token_file and no token", server)
	}
	trust := upd["trust"].(map[string]any)
	if keys := trust["minisign_public_keys"].([]any); len(keys) != 1 || keys[0] != a.publicKey {
		t.Errorf("trust.minisign_public_keys = %v", keys)
	}

	for _, p := range []string{"etc/myriarch/token", "etc/otelcol/supervisor.yaml"} {
		fi, err := os.Stat(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s holds the token with mode %04o, want 0600", p, fi.Mode().Perm())
		}
	}
	for _, p := range []string{"etc/myriarch/updater.yaml", "etc/systemd/system/myriarch-updater.service",
		"etc/systemd/system/otelcol-supervisor.service", "opt/myriarch/bin/myriarch-updater"} {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), testToken) {
			t.Errorf("%s contains the token", p)
		}
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestRerunWithSameFlagsChangesNothing(t *testing.T) {
	needMinisign(t)
	a := completeArtifacts(t, "0.149.0")
	root := filepath.Join(t.TempDir(), "root")
	flags := siteFlags(t, a, root)
	if r := runScript(t, flags...); r.code != 0 {
		t.Fatalf("install failed:\n%s", r)
	}
	before := snapshot(t, root)
	for _, p := range []string{"opt/myriarch/bin/myriarch-updater", "opt/myriarch/bin/myriarch-sigstore"} {
		if _, ok := before[p]; !ok {
			t.Errorf("install left no %s", p)
		}
	}
	r := runScript(t, flags...)
	if r.code != 0 {
		t.Fatalf("re-run failed:\n%s", r)
	}
	if d := diffSnapshots(before, snapshot(t, root)); len(d) != 0 {
		t.Errorf("re-run changed files: %v", d)
	}
	if !strings.Contains(r.stdout, "nothing changed") {
		t.Errorf("re-run output does not say nothing changed:\n%s", r)
	}
}

// Changed site flags rewrite only the supervisor configuration, so only the supervisor
// would be restarted.
func TestChangedSiteFlagsRewriteOnlyTheSupervisorConfig(t *testing.T) {
	needMinisign(t)
	a := completeArtifacts(t, "0.149.0")
	root := filepath.Join(t.TempDir(), "root")
	flags := siteFlags(t, a, root)
	if r := runScript(t, flags...); r.code != 0 {
		t.Fatalf("install failed:\n%s", r)
	}
	before := snapshot(t, root)
	flags = withFlag(flags, "--site-region", "south")
	flags = withFlag(flags, "--site-name", "Edge site 7")
	r := runScript(t, flags...)
	if r.code != 0 {
		t.Fatalf("re-run failed:\n%s", r)
	}
	want := []string{"changed etc/otelcol", "changed etc/otelcol/supervisor.yaml"}
	if d := diffSnapshots(before, snapshot(t, root)); !slices.Equal(d, want) {
		t.Errorf("changes = %v, want %v", d, want)
	}
	if !strings.Contains(r.stdout, "changed, a running service needs a restart: otelcol-supervisor\n") {
		t.Errorf("want only otelcol-supervisor to need a restart:\n%s", r)
	}
	b, err := os.ReadFile(filepath.Join(root, "etc/otelcol/supervisor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `site.region: "south"`) || !strings.Contains(string(b), `site.name: "Edge site 7"`) {
		t.Errorf("supervisor.yaml not rewritten:\n%s", b)
	}
}

// A new token is in both the supervisor configuration and the updater's token file, so
// both services need a restart; a new updater binary, or a new Sigstore helper beside it,
// restarts only the updater.
func TestRestartsFollowWhatChanged(t *testing.T) {
	needMinisign(t)
	a := completeArtifacts(t, "0.149.0")
	root := filepath.Join(t.TempDir(), "root")
	flags := siteFlags(t, a, root)
	if r := runScript(t, flags...); r.code != 0 {
		t.Fatalf("install failed:\n%s", r)
	}
	r := runScript(t, append(withoutFlag(flags, "--token-file"), "--token", "another-token")...)
	if r.code != 0 || !strings.Contains(r.stdout, "needs a restart: otelcol-supervisor myriarch-updater\n") {
		t.Errorf("new token: want both restarted:\n%s", r)
	}
	a.add(t, "myriarch-updater_linux_"+runtime.GOARCH, fakeExecutable("myriarch-updater", "1.1.0"))
	r = runScript(t, flags...)
	if r.code != 0 || !strings.Contains(r.stdout, "needs a restart: otelcol-supervisor myriarch-updater\n") {
		t.Errorf("token back and new updater: want both restarted:\n%s", r)
	}
	a.add(t, "myriarch-updater_linux_"+runtime.GOARCH, fakeExecutable("myriarch-updater", "1.2.0"))
	r = runScript(t, flags...)
	if r.code != 0 || !strings.Contains(r.stdout, "needs a restart: myriarch-updater\n") {
		t.Errorf("new updater: want only the updater restarted:\n%s", r)
	}
	root2 := snapshot(t, root)
	a.add(t, sigstoreArtifact, fakeExecutable("myriarch-sigstore", "1.2.0"))
	r = runScript(t, flags...)
	if r.code != 0 || !strings.Contains(r.stdout, "needs a restart: myriarch-updater\n") ||
		!strings.Contains(r.stdout, "done: 1 change(s)") {
		t.Errorf("new sigstore helper: want one change and only the updater restarted:\n%s", r)
	}
	want := []string{"changed opt/myriarch/bin", "changed opt/myriarch/bin/myriarch-sigstore"}
	if d := diffSnapshots(root2, snapshot(t, root)); !slices.Equal(d, want) {
		t.Errorf("new sigstore helper: changes = %v, want %v", d, want)
	}
	checkSigstoreHelper(t, root, a)
}

// A new collector version is unpacked next to the old one and current switched; the old
// version stays for rollback.
func TestNewCollectorVersionSwitchesCurrent(t *testing.T) {
	needMinisign(t)
	a := completeArtifacts(t, "0.149.0")
	a.addCollector(t, "0.150.0")
	root := filepath.Join(t.TempDir(), "root")
	flags := siteFlags(t, a, root)
	if r := runScript(t, flags...); r.code != 0 {
		t.Fatalf("install failed:\n%s", r)
	}
	if r := runScript(t, withFlag(flags, "--collector-version", "v0.150.0")...); r.code != 0 {
		t.Fatalf("upgrade failed:\n%s", r)
	}
	coll := filepath.Join(root, "opt/myriarch/collector")
	if l, err := os.Readlink(filepath.Join(coll, "current")); err != nil || l != "versions/0.150.0" {
		t.Errorf("current -> %q, %v; want versions/0.150.0", l, err)
	}
	for _, v := range []string{"0.149.0", "0.150.0"} {
		if _, err := os.Stat(filepath.Join(coll, "versions", v, "otelcol-contrib")); err != nil {
			t.Errorf("version %s: %v", v, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(coll, "versions"))
	if len(entries) != 2 {
		t.Errorf("versions/ holds %d entries, want 2 (no temporary leftovers)", len(entries))
	}
}

func TestArtifactsFromURL(t *testing.T) {
	needMinisign(t)
	a := completeArtifacts(t, "0.149.0")
	srv := httptest.NewServer(http.FileServer(http.Dir(a.dir)))
	defer srv.Close()

	fromDir := filepath.Join(t.TempDir(), "root")
	if r := runScript(t, siteFlags(t, a, fromDir)...); r.code != 0 {
		t.Fatalf("install from directory failed:\n%s", r)
	}
	fromURL := filepath.Join(t.TempDir(), "root")
	r := runScript(t, withFlag(siteFlags(t, a, fromURL), "--artifacts", srv.URL+"/")...)
	if r.code != 0 {
		t.Fatalf("install from %s failed:\n%s", srv.URL, r)
	}
	if got, want := manifest(t, fromURL), manifest(t, fromDir); got != want {
		t.Errorf("install from URL differs from install from directory:\n%s\nvs\n%s", got, want)
	}

	missing := filepath.Join(t.TempDir(), "root")
	r = runScript(t, withFlag(siteFlags(t, a, missing), "--artifacts", srv.URL+"/nothing-here/")...)
	if r.code == 0 || !strings.Contains(r.stderr, "cannot download") {
		t.Errorf("missing remote artifacts: want a download error:\n%s", r)
	}
	assertNotCreated(t, missing)
}

func assertNotCreated(t *testing.T, root string) {
	t.Helper()
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Errorf("%s was created (%v): nothing may be written", root, err)
	}
}

// Every class of bad artifact aborts before the first file is written: on a fresh root
// nothing exists afterwards, and over an existing install nothing changes.
func TestBadArtifactsInstallNothing(t *testing.T) {
	needMinisign(t)
	arch := runtime.GOARCH
	collector := "otelcol_0.149.0_linux_" + arch + ".tar.gz"
	updater := "myriarch-updater_linux_" + arch
	helper := sigstoreArtifact
	otherKey := func(t *testing.T, a *artifactSet, name string) {
		_, priv, err := minisign.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(a.dir, name))
		write(t, filepath.Join(a.dir, name+".minisig"), minisign.Sign(priv, b), 0o644)
	}
	cases := []struct {
		name   string
		break_ func(t *testing.T, a *artifactSet)
		want   string
	}{
		{"collector signed with another key", func(t *testing.T, a *artifactSet) { otherKey(t, a, collector) },
			"minisign signature does not verify"},
		{"updater signed with another key", func(t *testing.T, a *artifactSet) { otherKey(t, a, updater) },
			"minisign signature does not verify"},
		{"sigstore helper signed with another key", func(t *testing.T, a *artifactSet) { otherKey(t, a, helper) },
			"minisign signature does not verify"},
		{"missing sigstore helper", func(t *testing.T, a *artifactSet) {
			os.Remove(filepath.Join(a.dir, helper))
		}, helper + " not found"},
		{"missing sigstore helper signature", func(t *testing.T, a *artifactSet) {
			os.Remove(filepath.Join(a.dir, helper+".minisig"))
		}, "not found"},
		{"tampered sigstore helper", func(t *testing.T, a *artifactSet) {
			write(t, filepath.Join(a.dir, helper), []byte("#!/bin/sh\nexit 0\n"), 0o644)
		}, "artifact " + helper + ": SHA-256 mismatch"},
		{"signature of other content", func(t *testing.T, a *artifactSet) {
			write(t, filepath.Join(a.dir, updater+".minisig"), minisign.Sign(a.private, []byte("other")), 0o644)
		}, "minisign signature does not verify"},
		{"garbage signature", func(t *testing.T, a *artifactSet) {
			write(t, filepath.Join(a.dir, collector+".minisig"), []byte("not a signature\n"), 0o644)
		}, "minisign signature does not verify"},
		{"missing signature", func(t *testing.T, a *artifactSet) {
			os.Remove(filepath.Join(a.dir, updater+".minisig"))
		}, "not found"},
		{"wrong sha256", func(t *testing.T, a *artifactSet) {
			write(t, filepath.Join(a.dir, collector+".sha256"), []byte(strings.Repeat("0", 64)+"\n"), 0o644)
		}, "SHA-256 mismatch"},
		{"sha256 file without digest", func(t *testing.T, a *artifactSet) {
			write(t, filepath.Join(a.dir, collector+".sha256"), []byte("hello\n"), 0o644)
		}, "holds no SHA-256 digest"},
		{"tampered binary", func(t *testing.T, a *artifactSet) {
			write(t, filepath.Join(a.dir, updater), []byte("#!/bin/sh\necho evil\n"), 0o644)
		}, "SHA-256 mismatch"},
		{"missing collector", func(t *testing.T, a *artifactSet) {
			os.Remove(filepath.Join(a.dir, collector))
		}, "not found"},
		{"archive with ..", func(t *testing.T, a *artifactSet) {
			a.add(t, collector, tarGz(t, map[string]tarEntry{
				"otelcol-contrib": {mode: 0o755, body: fakeExecutable("otelcol-contrib", "0.149.0")},
				"../escape":       {mode: 0o644, body: []byte("x")},
			}))
		}, "absolute path or '..'"},
		{"archive with a symlink", func(t *testing.T, a *artifactSet) {
			a.add(t, collector, tarGz(t, map[string]tarEntry{
				"otelcol-contrib": {typeflag: '2', linkname: "/bin/sh"},
			}))
		}, "links or special files"},
		{"archive without the executable", func(t *testing.T, a *artifactSet) {
			a.add(t, collector, tarGz(t, map[string]tarEntry{"otelcol": {mode: 0o755, body: []byte("x")}}))
		}, "has no otelcol-contrib"},
		{"not an archive", func(t *testing.T, a *artifactSet) { a.add(t, collector, []byte("plain text")) },
			"not a gzip tar archive"},
		{"collector reporting another version", func(t *testing.T, a *artifactSet) {
			a.add(t, collector, tarGz(t, map[string]tarEntry{
				"otelcol-contrib": {mode: 0o755, body: fakeExecutable("otelcol-contrib", "0.148.0")},
			}))
		}, "does not report 0.149.0"},
		{"collector that fails", func(t *testing.T, a *artifactSet) {
			a.add(t, collector, tarGz(t, map[string]tarEntry{
				"otelcol-contrib": {mode: 0o755, body: []byte("#!/bin/sh\nexit 1\n")},
			}))
		}, "--version failed"},
	}
	// One good install that every case copies and then tries to upgrade.
	good := completeArtifacts(t, "0.149.0")
	installed := filepath.Join(t.TempDir(), "root")
	if r := runScript(t, siteFlags(t, good, installed)...); r.code != 0 {
		t.Fatalf("install failed:\n%s", r)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// Fresh root: nothing at all may be created.
			a := completeArtifacts(t, "0.149.0")
			c.break_(t, a)
			root := filepath.Join(t.TempDir(), "root")
			r := runScript(t, siteFlags(t, a, root)...)
			if r.code == 0 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "nothing was installed") {
				t.Errorf("want failure mentioning %q:\n%s", c.want, r)
			}
			assertNotCreated(t, root)

			// Existing install: a broken upgrade (new binaries, changed flags) leaves it
			// exactly as it was.
			root = filepath.Join(t.TempDir(), "root")
			if out, err := exec.Command("cp", "-a", installed, root).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v\n%s", err, out)
			}
			before := snapshot(t, root)
			upgrade := good.clone(t)
			upgrade.addBinaries(t, "2.0.0")
			c.break_(t, upgrade)
			flags := withFlag(siteFlags(t, upgrade, root), "--site-region", "changed")
			if r := runScript(t, flags...); r.code == 0 {
				t.Errorf("broken upgrade succeeded:\n%s", r)
			}
			if d := diffSnapshots(before, snapshot(t, root)); len(d) != 0 {
				t.Errorf("broken upgrade changed the install: %v", d)
			}
		})
	}
}

func TestDryRunPrintsPlanAndWritesNothing(t *testing.T) {
	a := completeArtifacts(t, "0.149.0")
	root := filepath.Join(t.TempDir(), "root")
	r := runScript(t, append(siteFlags(t, a, root), "--dry-run")...)
	if r.code != 0 {
		t.Fatalf("dry run failed:\n%s", r)
	}
	for _, want := range []string{"plan (dry run", "would write " + root + "/etc/otelcol/supervisor.yaml (600)",
		"would switch " + root + "/opt/myriarch/collector/current to versions/0.149.0",
		" myriarch-updater_linux_" + runtime.GOARCH + " " + sigstoreArtifact + "\n",
		"would install " + root + "/opt/myriarch/bin/myriarch-sigstore (0755) if it differs from " + sigstoreArtifact,
		"nothing was changed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, r)
		}
	}
	assertNotCreated(t, root)
}

func TestContainerModeInstallsUpdaterOnly(t *testing.T) {
	needMinisign(t)
	a := newArtifactSet(t)
	a.addBinaries(t, "1.0.0")
	root := filepath.Join(t.TempDir(), "root")
	flags := withoutFlag(siteFlags(t, a, root), "--collector-version")
	flags = withFlag(flags, "--mode", "container")
	r := runScript(t, flags...)
	if r.code != 0 {
		t.Fatalf("container-mode install failed:\n%s", r)
	}
	golden(t, "install-container.golden", manifest(t, root, a.publicKey, "@MINISIGN_KEY@"))
}

func TestUninstallKeepsDataUnlessPurge(t *testing.T) {
	needMinisign(t)
	a := completeArtifacts(t, "0.149.0")
	root := filepath.Join(t.TempDir(), "root")
	if r := runScript(t, siteFlags(t, a, root)...); r.code != 0 {
		t.Fatalf("install failed:\n%s", r)
	}
	// The supervisor's state must survive an uninstall without --purge.
	write(t, filepath.Join(root, "var/lib/otelcol/supervisor/persistent_state.yaml"), []byte("instance_id: x\n"), 0o600)

	before := snapshot(t, root)
	r := runScript(t, "--uninstall", "--root", root, "--no-start", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "would remove "+root+"/opt/myriarch/collector") ||
		!strings.Contains(r.stdout, "would remove "+root+"/opt/myriarch/bin/myriarch-sigstore\n") {
		t.Errorf("uninstall dry run:\n%s", r)
	}
	if d := diffSnapshots(before, snapshot(t, root)); len(d) != 0 {
		t.Errorf("uninstall --dry-run changed files: %v", d)
	}

	if r := runScript(t, "--uninstall", "--root", root, "--no-start"); r.code != 0 {
		t.Fatalf("uninstall failed:\n%s", r)
	}
	golden(t, "uninstall-kept.golden", manifest(t, root, a.publicKey, "@MINISIGN_KEY@"))

	if r := runScript(t, "--uninstall", "--purge", "--root", root, "--no-start"); r.code != 0 {
		t.Fatalf("purge failed:\n%s", r)
	}
	golden(t, "uninstall-purged.golden", manifest(t, root))
}

// BenchmarkInstall measures a fresh install under --root (verification of three signed
// artifacts included) and a no-op re-run.
func BenchmarkInstall(b *testing.B) {
	testenv.Tool(b, "minisign", "minisign")
	a := completeArtifacts(b, "0.149.0")
	// CPU time (user+system of the script and every command it waited for) is reported
	// too: wall time on a shared machine is mostly waiting for a CPU.
	var cpu time.Duration
	run := func(b *testing.B, root string) {
		cmd := exec.Command("sh", append([]string{"install.sh"}, siteFlags(b, a, root)...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	b.Run("fresh", func(b *testing.B) {
		cpu = 0
		for b.Loop() {
			run(b, filepath.Join(b.TempDir(), "root"))
		}
		b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	})
	b.Run("rerun", func(b *testing.B) {
		root := filepath.Join(b.TempDir(), "root")
		run(b, root)
		cpu = 0
		for b.Loop() {
			run(b, root)
		}
		b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	})
}
