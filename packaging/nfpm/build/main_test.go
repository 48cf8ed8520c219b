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
	"dpkg-deb":        "dpkg",
	"rpm":             "rpm",
	"shellcheck":      "shellcheck",
	"systemd-analyze": "systemd",
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

// rpmArch is rpm's name of a GOARCH.
var rpmArch = map[string]string{"amd64": "x86_64", "arm64": "aarch64"}

func fakeBinaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range []string{"myriarch-updater", "myriarch-sigstore", "myriarchd"} {
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
	want := []string{
		filepath.Join(out, "myriarch-updater_1.2.3_"+arch+".deb"),
		filepath.Join(out, "myriarch-updater-1.2.3-1."+rpmArch[arch]+".rpm"),
		filepath.Join(out, "myriarchd_1.2.3_"+arch+".deb"),
		filepath.Join(out, "myriarchd-1.2.3-1."+rpmArch[arch]+".rpm"),
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
		musts := []string{"/opt/myriarch/bin/", "/usr/bin/"}
		if strings.Contains(p, "myriarch-updater") {
			musts = append(musts, "myriarch-updater.service", "systemctl enable myriarch-updater.service")
		} else {
			musts = append(musts, "myriarchd.service", "/etc/myriarch/myriarchd.yaml", "useradd --system")
		}
		for _, m := range musts {
			if !bytes.Contains(b, []byte(m)) {
				t.Errorf("%s: header lacks %q", p, m)
			}
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
