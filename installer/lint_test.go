//go:build linux

package installer_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/internal/testenv"
)

// needTool returns the path of a tool the checks run, failing without it.
func needTool(t *testing.T, name string) string {
	t.Helper()
	pkg := map[string]string{"systemd-analyze": "systemd"}[name]
	if pkg == "" {
		pkg = name
	}
	return testenv.Tool(t, name, pkg)
}

func TestShellcheckClean(t *testing.T) {
	sc := needTool(t, "shellcheck")
	out, err := exec.Command(sc, "--shell=sh", "--severity=style", "install.sh").CombinedOutput()
	if err != nil {
		t.Errorf("shellcheck install.sh: %v\n%s", err, out)
	}
}

const unitsDir = "../packaging/systemd"

var unitNames = []string{"otelcol-supervisor.service", "myriarch-updater.service"}

// systemdVerify runs systemd-analyze verify on the units and fails on any output: it
// prints warnings (unknown keys, bad values) without failing.
func systemdVerify(t *testing.T, paths ...string) {
	t.Helper()
	sa := needTool(t, "systemd-analyze")
	out, err := exec.Command(sa, append([]string{"verify"}, paths...)...).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) != 0 {
		t.Errorf("systemd-analyze verify %v: %v\n%s", paths, err, out)
	}
}

// The packaged units, with their executables pointed at stand-ins (verify checks that
// ExecStart exists).
func TestPackagedUnitsVerify(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	var paths []string
	for _, exe := range []string{"opampsupervisor", "myriarch-updater"} {
		write(t, filepath.Join(bin, exe), []byte("#!/bin/sh\n"), 0o755)
	}
	for _, u := range unitNames {
		b, err := os.ReadFile(filepath.Join(unitsDir, u))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, u)
		write(t, p, []byte(strings.ReplaceAll(string(b), "/opt/myriarch/bin/", bin+"/")), 0o644)
		paths = append(paths, p)
	}
	systemdVerify(t, paths...)
}

// A unit file's [Service] settings as key -> values.
func serviceSettings(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		default:
			k, v, _ := strings.Cut(line, "=")
			m[section+k] = append(m[section+k], v)
		}
	}
	return m
}

func TestUnitsStopSupervisorWithSIGINTAndRestartOnFailure(t *testing.T) {
	for _, u := range unitNames {
		s := serviceSettings(t, filepath.Join(unitsDir, u))
		if got := s["[Service]Restart"]; !slices.Equal(got, []string{"on-failure"}) {
			t.Errorf("%s: Restart=%v, want on-failure", u, got)
		}
		if got := s["[Install]WantedBy"]; !slices.Equal(got, []string{"multi-user.target"}) {
			t.Errorf("%s: WantedBy=%v", u, got)
		}
		if len(s["[Unit]ConditionPathExists"]) != 1 {
			t.Errorf("%s: want one ConditionPathExists (no start without configuration)", u)
		}
	}
	s := serviceSettings(t, filepath.Join(unitsDir, "otelcol-supervisor.service"))
	if got := s["[Service]KillSignal"]; !slices.Equal(got, []string{"SIGINT"}) {
		t.Errorf("otelcol-supervisor.service: KillSignal=%v, want SIGINT (the only clean stop)", got)
	}
}

// checkUnitsMatchPackaged: install.sh embeds the units; under --root they are the packaged
// units with every path under the root, and they verify as installed.
func checkUnitsMatchPackaged(t *testing.T, root string) {
	var paths []string
	for _, u := range unitNames {
		p := filepath.Join(root, "etc/systemd/system", u)
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(unitsDir, u))
		if err != nil {
			t.Fatal(err)
		}
		if s := strings.ReplaceAll(string(got), root, ""); s != string(want) {
			t.Errorf("%s written by install.sh differs from %s/%s:\n%s", u, unitsDir, u, s)
		}
		paths = append(paths, p)
	}
	systemdVerify(t, paths...)
}

var (
	shFlagRe  = regexp.MustCompile(`(?m)^\t\t(--[a-z][a-z-]*)\) (value|switch) `)
	ps1Param  = regexp.MustCompile(`(?s)\bparam\s*\((.*?)\n\)`)
	ps1NameRe = regexp.MustCompile(`\[(string|switch)\]\s*\$([A-Za-z]+)`)
	upperRe   = regexp.MustCompile(`[A-Z]`)
)

type flagSpec struct {
	name       string
	takesValue bool
}

func shFlags(t *testing.T) []flagSpec {
	t.Helper()
	b, err := os.ReadFile("install.sh")
	if err != nil {
		t.Fatal(err)
	}
	var fs []flagSpec
	for _, m := range shFlagRe.FindAllStringSubmatch(string(b), -1) {
		fs = append(fs, flagSpec{m[1], m[2] == "value"})
	}
	return fs
}

// ps1Flags maps the PowerShell parameters ($SiteTimezone) to the sh names (--site-timezone).
func ps1Flags(t *testing.T) []flagSpec {
	t.Helper()
	b, err := os.ReadFile("install.ps1")
	if err != nil {
		t.Fatal(err)
	}
	m := ps1Param.FindSubmatch(b)
	if m == nil {
		t.Fatal("install.ps1 has no param( ... ) block")
	}
	var fs []flagSpec
	for _, p := range ps1NameRe.FindAllStringSubmatch(string(m[1]), -1) {
		kebab := upperRe.ReplaceAllStringFunc(p[2], func(s string) string { return "-" + strings.ToLower(s) })
		fs = append(fs, flagSpec{"-" + kebab, p[1] == "string"})
	}
	return fs
}

func TestBothScriptsAcceptTheSameFlags(t *testing.T) {
	sh, ps := shFlags(t), ps1Flags(t)
	if len(sh) < 20 {
		t.Fatalf("found only %d flags in install.sh: %v", len(sh), sh)
	}
	cmp := func(a, b flagSpec) int { return strings.Compare(a.name, b.name) }
	slices.SortFunc(sh, cmp)
	slices.SortFunc(ps, cmp)
	if !slices.Equal(sh, ps) {
		t.Errorf("flags differ:\ninstall.sh:  %v\ninstall.ps1: %v", sh, ps)
	}
	// The flag list, word for word.
	for _, f := range strings.Fields("--server --token --token-file --site-id --site-type --site-name " +
		"--site-country --site-region --site-timezone --environment --mode --collector-version " +
		"--artifacts --minisign-key --root --no-start --dry-run --uninstall --purge") {
		if !slices.ContainsFunc(sh, func(s flagSpec) bool { return s.name == f }) {
			t.Errorf("install.sh lacks %s", f)
		}
	}
}

// install.sh's country list is exactly tzdata's iso3166.tab (install.ps1's
// checks are myriarch-updater setup's, tested in agent/sitesetup).
func TestCountryListMatchesTzdata(t *testing.T) {
	tab := testenv.File(t, "/usr/share/zoneinfo/iso3166.tab", "tzdata")
	var want []string
	for _, line := range strings.Split(string(tab), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			want = append(want, strings.Fields(line)[0])
		}
	}
	for _, script := range []string{"install.sh"} {
		got := countryList(t, script)
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d countries, tzdata has %d; difference: %v", script, len(got), len(want),
				symmetricDifference(got, want))
		}
	}
}

var countryBlockRe = regexp.MustCompile(`(?s)ISO3166 ?= ?"([A-Z ,'\n]+)"`)

func countryList(t *testing.T, script string) []string {
	t.Helper()
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	m := countryBlockRe.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no ISO3166 list", script)
	}
	return strings.Fields(string(m[1]))
}

func symmetricDifference(a, b []string) []string {
	var d []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			d = append(d, "+"+x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			d = append(d, "-"+x)
		}
	}
	return d
}
