package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// entry is one path a package must hold.
type entry struct {
	path  string
	perms string // as ls -l shows them, e.g. "-rwxr-xr-x"
	owner string // user/group; "" is root/root
	link  string // symbolic link target
	same  string // repository file (relative to packaging/) it must equal byte for byte
	conf  bool   // a configuration file kept on upgrade
}

// packageSpec is what a package must contain: its entries and its maintainer scripts
// (repository files under packaging/nfpm/scripts) by deb control file name.
type packageSpec struct {
	name    string
	entries []entry
	scripts map[string]string
}

var packageSpecs = []packageSpec{
	{
		name: "myriarch-updater",
		entries: []entry{
			{path: "/opt/myriarch/bin/myriarch-updater", perms: "-rwxr-xr-x"},
			{path: "/usr/bin/myriarch-updater", perms: "lrwxrwxrwx", link: "/opt/myriarch/bin/myriarch-updater"},
			{path: "/opt/myriarch/bin/myriarch-sigstore", perms: "-rwxr-xr-x"},
			{path: "/usr/lib/systemd/system/myriarch-updater.service", perms: "-rw-r--r--", same: "systemd/myriarch-updater.service"},
			{path: "/etc/myriarch", perms: "drwxr-xr-x"},
			{path: "/var/lib/myriarch-updater", perms: "drwx------"},
		},
		scripts: map[string]string{
			"postinst": "updater-postinstall.sh",
			"prerm":    "updater-preremove.sh",
			"postrm":   "updater-postremove.sh",
		},
	},
	{
		name: "myriarchd",
		entries: []entry{
			{path: "/opt/myriarch/bin/myriarchd", perms: "-rwxr-xr-x"},
			{path: "/usr/bin/myriarchd", perms: "lrwxrwxrwx", link: "/opt/myriarch/bin/myriarchd"},
			{path: "/usr/lib/systemd/system/myriarchd.service", perms: "-rw-r--r--", same: "systemd/myriarchd.service"},
			{path: "/etc/myriarch/myriarchd.yaml", perms: "-rw-r--r--", same: "config/myriarchd.yaml", conf: true},
			{path: "/usr/share/myriarch/monitoring/alerts.yaml", perms: "-rw-r--r--", same: "monitoring/alerts.yaml"},
			{path: "/usr/share/myriarch/monitoring/grafana-dashboard.json", perms: "-rw-r--r--", same: "monitoring/grafana-dashboard.json"},
			{path: "/usr/share/bash-completion/completions/myriarchd", perms: "-rw-r--r--", same: "completion/myriarchd.bash"},
			{path: "/usr/share/zsh/vendor-completions/_myriarchd", perms: "-rw-r--r--", same: "completion/_myriarchd"},
			{path: "/usr/share/fish/vendor_completions.d/myriarchd.fish", perms: "-rw-r--r--", same: "completion/myriarchd.fish"},
			{path: "/etc/myriarch", perms: "drwxr-xr-x"},
			{path: "/etc/myriarch/estate", perms: "drwxr-xr-x"},
			{path: "/etc/myriarch/tls", perms: "drwxr-x---", owner: "root/myriarch"},
		},
		scripts: map[string]string{
			"preinst":  "myriarchd-preinstall.sh",
			"postinst": "myriarchd-postinstall.sh",
			"prerm":    "myriarchd-preremove.sh",
			"postrm":   "myriarchd-postremove.sh",
		},
	},
}

// listed is one entry of a package's file list, as the package tool reports it.
type listed struct {
	perms, owner, link, digest string
	conf                       bool
}

// builtPackage returns the path of the built package of name (version 1.2.3) in format.
func builtPackage(t *testing.T, paths []string, name, format string) string {
	t.Helper()
	want := name + "_1.2.3_" + runtime.GOARCH + ".deb"
	if format == "rpm" {
		want = name + "-1.2.3-1." + rpmArch[runtime.GOARCH] + ".rpm"
	}
	for _, p := range paths {
		if filepath.Base(p) == want {
			return p
		}
	}
	t.Fatalf("no %s in %v", want, paths)
	return ""
}

func checkEntries(t *testing.T, pkg string, spec packageSpec, got map[string]listed, symlinkPerms bool) {
	t.Helper()
	want := map[string]bool{}
	for _, e := range spec.entries {
		want[e.path] = true
		l, ok := got[e.path]
		if !ok {
			t.Errorf("%s lacks %s", pkg, e.path)
			continue
		}
		perms := e.perms
		if e.link != "" && !symlinkPerms {
			perms, l.perms = perms[:1], l.perms[:1]
		}
		owner := e.owner
		if owner == "" {
			owner = "root/root"
		}
		if l.perms != perms || l.owner != owner || l.link != e.link || l.conf != e.conf {
			t.Errorf("%s: %s is %s %s link %q conffile %v, want %s %s link %q conffile %v",
				pkg, e.path, l.perms, l.owner, l.link, l.conf, perms, owner, e.link, e.conf)
		}
		if e.same != "" && l.digest != "" {
			if sum := fileDigest(t, filepath.Join(packaging, e.same)); l.digest != sum {
				t.Errorf("%s: %s differs from packaging/%s", pkg, e.path, e.same)
			}
		}
	}
	// Anything else is a directory on the way to an entry.
	for p, l := range got {
		if !want[p] && (l.perms[0] != 'd' || !isAncestor(p, spec.entries)) {
			t.Errorf("%s holds the unexpected %s (%s)", pkg, p, l.perms)
		}
	}
}

func isAncestor(dir string, entries []entry) bool {
	for _, e := range entries {
		if strings.HasPrefix(e.path, dir+"/") {
			return true
		}
	}
	return false
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// debEntries lists a deb's data with dpkg-deb, its conffiles and the digests of its
// regular files (extracted).
func debEntries(t *testing.T, dpkgDeb, deb, ctl string) map[string]listed {
	t.Helper()
	out, err := exec.Command(dpkgDeb, "--contents", deb).Output()
	if err != nil {
		t.Fatalf("dpkg-deb --contents %s: %v", deb, err)
	}
	x := t.TempDir()
	if out, err := exec.Command(dpkgDeb, "-x", deb, x).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v\n%s", err, out)
	}
	conffiles, _ := os.ReadFile(filepath.Join(ctl, "conffiles"))
	conf := strings.Fields(string(conffiles))
	got := map[string]listed{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// perms owner size date time ./path [-> target]
		f := strings.Fields(line)
		if len(f) < 6 {
			t.Fatalf("dpkg-deb --contents line %q", line)
		}
		p := strings.TrimSuffix(strings.TrimPrefix(f[5], "."), "/")
		if p == "" {
			continue
		}
		l := listed{perms: f[0], owner: f[1]}
		if len(f) == 8 && f[6] == "->" {
			l.link = f[7]
		}
		if f[0][0] == '-' {
			l.digest = fileDigest(t, filepath.Join(x, p))
		}
		for _, c := range conf {
			l.conf = l.conf || c == p
		}
		got[p] = l
	}
	return got
}

// Each deb holds exactly its entries with their modes, owners, link targets and conffile
// status, its packaged files byte for byte and its maintainer scripts; dpkg-deb reads it.
func TestDebContents(t *testing.T) {
	dpkgDeb := needTool(t, "dpkg-deb")
	_, paths := buildAll(t)
	for _, spec := range packageSpecs {
		t.Run(spec.name, func(t *testing.T) {
			deb := builtPackage(t, paths, spec.name, "deb")
			ctl := t.TempDir()
			if out, err := exec.Command(dpkgDeb, "-e", deb, ctl).CombinedOutput(); err != nil {
				t.Fatalf("dpkg-deb -e: %v\n%s", err, out)
			}
			checkEntries(t, filepath.Base(deb), spec, debEntries(t, dpkgDeb, deb, ctl), true)

			for _, name := range []string{"preinst", "postinst", "prerm", "postrm"} {
				p := filepath.Join(ctl, name)
				script, ok := spec.scripts[name]
				fi, err := os.Stat(p)
				if !ok {
					if err == nil {
						t.Errorf("unexpected %s", name)
					}
					continue
				}
				if err != nil {
					t.Error(err)
					continue
				}
				if fi.Mode() != 0o755 {
					t.Errorf("%s: mode %v, want 0755", name, fi.Mode())
				}
				if fileDigest(t, p) != fileDigest(t, filepath.Join(packaging, "nfpm/scripts", script)) {
					t.Errorf("%s differs from nfpm/scripts/%s", name, script)
				}
			}
			control, err := os.ReadFile(filepath.Join(ctl, "control"))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []string{"Package: " + spec.name + "\n", "Version: 1.2.3\n", "Architecture: " + runtime.GOARCH + "\n"} {
				if !strings.Contains(string(control), w) {
					t.Errorf("control lacks %q:\n%s", w, control)
				}
			}
		})
	}
}

// rpmScriptTags are the rpm header tags of the deb maintainer scripts.
var rpmScriptTags = map[string]string{"preinst": "PREIN", "postinst": "POSTIN", "prerm": "PREUN", "postrm": "POSTUN"}

// Each rpm holds the same entries (%config(noreplace) for the configuration), file
// digests equal to the repository files, and the same scriptlets; rpm reads it.
func TestRpmContents(t *testing.T) {
	rpm := needTool(t, "rpm")
	_, paths := buildAll(t)
	for _, spec := range packageSpecs {
		t.Run(spec.name, func(t *testing.T) {
			pkg := builtPackage(t, paths, spec.name, "rpm")
			query := func(format string) string {
				t.Helper()
				out, err := exec.Command(rpm, "-qp", "--qf", format, pkg).Output()
				if err != nil {
					t.Fatalf("rpm -qp --qf %q: %v", format, err)
				}
				return string(out)
			}
			if algo := strings.TrimSpace(query("%{FILEDIGESTALGO}")); algo != "8" {
				t.Fatalf("file digest algorithm %s, want 8 (sha256)", algo)
			}
			got := map[string]listed{}
			list := query("[%{FILEMODES:perms}\t%{FILEUSERNAME}/%{FILEGROUPNAME}\t%{FILEFLAGS:fflags}\t%{FILELINKTOS}\t%{FILEDIGESTS}\t%{FILENAMES}\n]")
			for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
				f := strings.Split(line, "\t")
				if len(f) != 6 {
					t.Fatalf("rpm file line %q", line)
				}
				// c: %config, n: noreplace.
				got[f[5]] = listed{perms: f[0], owner: f[1], link: f[3], digest: f[4],
					conf: strings.Contains(f[2], "c") && strings.Contains(f[2], "n")}
			}
			// nfpm's rpm writes symbolic links with mode 0, which rpm ignores.
			checkEntries(t, filepath.Base(pkg), spec, got, false)

			for deb, tag := range rpmScriptTags {
				got := query("%{" + tag + "}")
				script, ok := spec.scripts[deb]
				if !ok {
					if got != "(none)" {
						t.Errorf("unexpected %s scriptlet", tag)
					}
					continue
				}
				want, err := os.ReadFile(filepath.Join(packaging, "nfpm/scripts", script))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal([]byte(got), want) {
					t.Errorf("%s scriptlet differs from nfpm/scripts/%s:\n%s", tag, script, got)
				}
			}
		})
	}
}
