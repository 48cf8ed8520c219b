package e2e

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/test/e2e/site"
	"github.com/myriarch/myriarch/test/peers/peerbuild"
	"github.com/myriarch/myriarch/test/peers/peerrun"
)

// TestScriptInstalledSite installs a site with installer/install.sh (under a
// root prefix, against signed artifacts made from the real peers), checks that
// the Sigstore verifier lies where the installed updater looks for it, starts
// the site with the updater in process control running the generated
// supervisor config, and checks that the server sees the site attributes and
// the pairing.
func TestScriptInstalledSite(t *testing.T) {
	t.Parallel()
	testenv.Tool(t, "minisign", "minisign")
	e := newEnv(t)
	arts := filepath.Join(e.root, "artifacts")
	os.MkdirAll(arts, 0o755)
	col, _ := peers.Collector(peerbuild.VersionM1)
	publish := func(name, src string, archive bool) {
		t.Helper()
		dst := filepath.Join(arts, name)
		if archive {
			writeArchive(t, dst, "otelcol-contrib", src)
		} else {
			copyExec(t, src, dst)
		}
		data, _ := os.ReadFile(dst)
		sum := sha256.Sum256(data)
		os.WriteFile(dst+".sha256", []byte(hex.EncodeToString(sum[:])+"  "+name+"\n"), 0o644)
		if err := peerbuild.SignTo(dst, dst+".minisig", e.key); err != nil {
			t.Fatal(err)
		}
	}
	publish(fmt.Sprintf("otelcol_%s_linux_amd64.tar.gz", col.Version), col.Executable, true)
	publish("opampsupervisor_linux_amd64", peers.Supervisor, false)
	publish("myriarch-updater_linux_amd64", bins.Updater, false)
	publish("myriarch-sigstore_linux_amd64", bins.Sigstore, false)

	root := filepath.Join(e.root, "sysroot")
	pub, _ := e.pub.MarshalText()
	pubFile := filepath.Join(e.root, "minisign.pub")
	os.WriteFile(pubFile, pub, 0o644)
	script, _ := filepath.Abs("../../installer/install.sh")
	cmd := exec.Command("sh", script,
		"--server", e.srv.OpAMPURL(), "--token", e.token,
		"--site-id", "007", "--site-type", "edge", "--site-name", "Edge site 7", "--site-country", "DE",
		"--site-region", "north", "--site-timezone", "Europe/Amsterdam", "--environment", "production",
		"--mode", "binary", "--collector-version", col.Version, "--artifacts", arts,
		"--minisign-key", pubFile, "--root", root, "--no-start")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	if strings.Contains(string(out), e.token) {
		t.Fatal("install.sh printed the token")
	}
	checkScriptInstalledSigstore(t, root, e.root)

	// Several collectors share this machine in the test suite: keep the
	// collector's own metrics port out of the way, as every test supervisor does.
	supCfg := filepath.Join(root, "etc", "otelcol", "supervisor.yaml")
	editYAML(t, supCfg, func(m map[string]any) {
		agent := m["agent"].(map[string]any)
		args, _ := agent["args"].([]any)
		agent["args"] = append(args, peerrun.NoMetricsArg)
	})
	updCfg := filepath.Join(root, "etc", "myriarch", "updater.yaml")
	editYAML(t, updCfg, func(m map[string]any) {
		sup := m["supervisor"].(map[string]any)
		sup["control"] = "process"
		delete(sup, "service")
		sup["command"] = []string{filepath.Join(root, "opt", "myriarch", "bin", "opampsupervisor"), "--config", supCfg}
	})
	p, err := peerrun.Start(filepath.Join(root, "opt", "myriarch", "bin", "myriarch-updater"),
		[]string{"run", "--config", updCfg}, nil, filepath.Join(e.root, "script-updater.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(20 * time.Second) })

	storage := filepath.Join(root, "var", "lib", "otelcol", "supervisor")
	s := &site.Site{StorageDir: storage}
	e.colUID, err = s.WaitCollectorUID(90 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	a := e.waitCollector("script-installed collector linked", 90*time.Second, func(a site.Agent) bool {
		return a.Online && a.Pairing.State == "linked"
	})
	for k, v := range siteAttrs {
		if a.Attributes[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, a.Attributes[k], v)
		}
	}
	if a.Identifying["service.version"] != col.Version {
		t.Errorf("service.version = %q", a.Identifying["service.version"])
	}
}

// checkScriptInstalledSigstore: install.sh put the real myriarch-sigstore
// beside the updater (0755, the published binary, runnable), and the installed
// updater, given a trust.sigstore policy, finds it there; a copy of the updater
// without it beside it does not.
func checkScriptInstalledSigstore(t *testing.T, root, scratch string) {
	t.Helper()
	bin := filepath.Join(root, "opt", "myriarch", "bin")
	helper := filepath.Join(bin, "myriarch-sigstore")
	fi, err := os.Stat(helper)
	if err != nil {
		t.Fatalf("install.sh did not install the Sigstore verifier: %v", err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("%s: mode %04o, want 0755", helper, fi.Mode().Perm())
	}
	got, _ := os.ReadFile(helper)
	want, _ := os.ReadFile(bins.Sigstore)
	if len(want) == 0 || string(got) != string(want) {
		t.Errorf("%s is not the published myriarch-sigstore", helper)
	}
	if out, err := exec.Command(helper, "--version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "myriarch-sigstore ") {
		t.Errorf("%s --version: %v\n%s", helper, err, out)
	}

	// The updater's own check (validate warns when trust.sigstore's verifier is
	// not beside the running executable).
	cfg := filepath.Join(scratch, "updater-sigstore.yaml")
	data, err := os.ReadFile(filepath.Join(root, "etc", "myriarch", "updater.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cfg, data, 0o640)
	editYAML(t, cfg, func(m map[string]any) {
		m["trust"].(map[string]any)["sigstore"] = map[string]any{
			"identity_regexp": `^https://github\.com/open-telemetry/opentelemetry-collector-releases/\.github/workflows/.*@refs/tags/v.*$`,
			"issuer":          "https://token.actions.githubusercontent.com",
		}
	})
	const missing = "myriarch-sigstore is not installed"
	validate := func(updater string) string {
		t.Helper()
		out, err := exec.Command(updater, "validate", "--config", cfg).CombinedOutput()
		if err != nil {
			t.Fatalf("%s validate: %v\n%s", updater, err, out)
		}
		return string(out)
	}
	if out := validate(filepath.Join(bin, "myriarch-updater")); strings.Contains(out, missing) {
		t.Errorf("the script-installed updater does not find its Sigstore verifier:\n%s", out)
	}
	alone := filepath.Join(scratch, "alone")
	os.MkdirAll(alone, 0o755)
	copyExec(t, filepath.Join(bin, "myriarch-updater"), filepath.Join(alone, "myriarch-updater"))
	if out := validate(filepath.Join(alone, "myriarch-updater")); !strings.Contains(out, missing) {
		t.Errorf("an updater without the verifier beside it does not say so:\n%s", out)
	}
}

func editYAML(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if err := os.WriteFile(path, out, st.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}

func copyExec(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeArchive(t *testing.T, dst, entry, src string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: entry, Mode: 0o755, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg})
	tw.Write(data)
	tw.Close()
	zw.Close()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
