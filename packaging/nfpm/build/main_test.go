package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const packaging = "../.."

// toolPackages names the Debian package of each tool the tests run.
var toolPackages = map[string]string{
	"dpkg-deb":   "dpkg",
	"rpm":        "rpm",
	"shellcheck": "shellcheck",
}

// needTool returns the path of a tool the checks run, failing without it: a check never
// silently disappears on a machine that lacks the tool.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: apt-get install -y %s (or bash test/setup.sh)", name, toolPackages[name])
	}
	return p
}

func fakeBinaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range []string{"myriarch-updater", "myriarchd"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\necho "+n+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func buildAll(t *testing.T) (out string, paths []string) {
	t.Helper()
	out = t.TempDir()
	var stdout bytes.Buffer
	err := run([]string{"-bin", fakeBinaries(t), "-packaging", packaging, "-version", "v1.2.3", "-out", out}, &stdout)
	if err != nil {
		t.Fatal(err)
	}
	return out, strings.Fields(stdout.String())
}

func TestBuildsDebAndRpmOfBothPackages(t *testing.T) {
	out, paths := buildAll(t)
	arch := runtime.GOARCH
	rpmArch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[arch]
	want := []string{
		filepath.Join(out, "myriarch-updater_1.2.3_"+arch+".deb"),
		filepath.Join(out, "myriarch-updater-1.2.3-1."+rpmArch+".rpm"),
		filepath.Join(out, "myriarchd_1.2.3_"+arch+".deb"),
		filepath.Join(out, "myriarchd-1.2.3-1."+rpmArch+".rpm"),
	}
	if !slices.Equal(paths, want) {
		t.Fatalf("built %v, want %v", paths, want)
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != len(want) {
		t.Errorf("output holds %d entries, want %d (no temporary files)", len(entries), len(want))
	}
	for _, p := range paths {
		if !strings.HasSuffix(p, ".rpm") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte{0xed, 0xab, 0xee, 0xdb}) {
			t.Errorf("%s: no rpm lead", p)
		}
		// File names and scriptlets live in the uncompressed rpm header.
		musts := []string{"/opt/myriarch/bin/"}
		if strings.Contains(p, "myriarch-updater") {
			musts = append(musts, "myriarch-updater.service", "systemctl enable myriarch-updater.service")
		}
		for _, m := range musts {
			if !bytes.Contains(b, []byte(m)) {
				t.Errorf("%s: header lacks %q", p, m)
			}
		}
	}
}

// The updater deb holds the binary, the packaged unit byte for byte and the maintainer
// scripts; dpkg-deb reads it.
func TestUpdaterDebContents(t *testing.T) {
	dpkgDeb := needTool(t, "dpkg-deb")
	_, paths := buildAll(t)
	deb := paths[0]
	x := t.TempDir()
	if out, err := exec.Command(dpkgDeb, "-x", deb, x).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v\n%s", err, out)
	}
	ctl := t.TempDir()
	if out, err := exec.Command(dpkgDeb, "-e", deb, ctl).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -e: %v\n%s", err, out)
	}
	checks := []struct {
		path string
		mode os.FileMode
		same string // file in the repository it must equal
	}{
		{filepath.Join(x, "opt/myriarch/bin/myriarch-updater"), 0o755, ""},
		{filepath.Join(x, "usr/lib/systemd/system/myriarch-updater.service"), 0o644, packaging + "/systemd/myriarch-updater.service"},
		{filepath.Join(x, "var/lib/myriarch-updater"), os.ModeDir | 0o700, ""},
		{filepath.Join(x, "etc/myriarch"), os.ModeDir | 0o755, ""},
		{filepath.Join(ctl, "postinst"), 0o755, packaging + "/nfpm/scripts/updater-postinstall.sh"},
		{filepath.Join(ctl, "prerm"), 0o755, packaging + "/nfpm/scripts/updater-preremove.sh"},
		{filepath.Join(ctl, "postrm"), 0o755, packaging + "/nfpm/scripts/updater-postremove.sh"},
	}
	for _, c := range checks {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Error(err)
			continue
		}
		if fi.Mode() != c.mode {
			t.Errorf("%s: mode %v, want %v", c.path, fi.Mode(), c.mode)
		}
		if c.same != "" {
			got, _ := os.ReadFile(c.path)
			want, err := os.ReadFile(c.same)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s", c.path, c.same)
			}
		}
	}
	control, err := os.ReadFile(filepath.Join(ctl, "control"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Package: myriarch-updater\n", "Version: 1.2.3\n", "Architecture: " + runtime.GOARCH + "\n"} {
		if !strings.Contains(string(control), w) {
			t.Errorf("control lacks %q:\n%s", w, control)
		}
	}
}

func TestBadOptionsAreAllReported(t *testing.T) {
	err := run([]string{"-bin", t.TempDir(), "-packaging", packaging, "-formats", "deb,apk", "-packages", "myriarch-updater,nope"}, &bytes.Buffer{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"-version is required", `-formats: "apk" is not deb or rpm`, `-packages: "nope"`,
		`-bin: binary of "myriarch-updater"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
}

func TestMaintainerScriptsShellcheckClean(t *testing.T) {
	sc := needTool(t, "shellcheck")
	scripts, _ := filepath.Glob(packaging + "/nfpm/scripts/*.sh")
	if len(scripts) != 3 {
		t.Fatalf("found scripts %v", scripts)
	}
	if out, err := exec.Command(sc, append([]string{"--shell=sh"}, scripts...)...).CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

// runScript runs a maintainer script with a fake systemctl that logs its arguments.
func runScript(t *testing.T, script string, systemdRunning, configured bool, args ...string) []string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	log := filepath.Join(dir, "systemctl.log")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/sh\necho \"$*\" >> " + log + "\n"
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run-systemd")
	if systemdRunning {
		if err := os.Mkdir(runDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dir, "updater.yaml")
	if configured {
		if err := os.WriteFile(config, []byte("server: {}\n"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("sh", append([]string{filepath.Join(packaging, "nfpm/scripts", script)}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"),
		"MYRIARCH_SYSTEMD_RUN="+runDir, "MYRIARCH_UPDATER_CONFIG="+config)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestPostinstallEnablesButStartsOnlyWhenConfigured(t *testing.T) {
	cases := []struct {
		name                string
		running, configured bool
		want                []string
	}{
		{"fresh install", true, false, []string{"daemon-reload", "enable myriarch-updater.service"}},
		{"configured", true, true, []string{"daemon-reload", "enable myriarch-updater.service", "restart myriarch-updater.service"}},
		{"no systemd running (image build)", false, true, []string{"enable myriarch-updater.service"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := runScript(t, "updater-postinstall.sh", c.running, c.configured, "configure")
			if !slices.Equal(got, c.want) {
				t.Errorf("systemctl calls = %q, want %q", got, c.want)
			}
		})
	}
}

func TestPreremoveStopsOnlyOnRemoval(t *testing.T) {
	for _, arg := range []string{"remove", "purge", "0"} {
		if got := runScript(t, "updater-preremove.sh", true, true, arg); !slices.Equal(got, []string{"disable --now myriarch-updater.service"}) {
			t.Errorf("prerm %s: systemctl calls = %q", arg, got)
		}
	}
	for _, arg := range []string{"upgrade", "1"} {
		if got := runScript(t, "updater-preremove.sh", true, true, arg); len(got) != 0 {
			t.Errorf("prerm %s: systemctl calls = %q, want none", arg, got)
		}
	}
}
