//go:build linux

package installer_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/internal/testenv"
)

// liveHost runs install.sh without --root, as on a real host, inside a private mount
// namespace whose /etc (a copy), /opt and /var/lib are directories of the test, with a
// systemctl on PATH that logs its calls. It needs root and unshare(1).
type liveHost struct {
	dir, log, active string
}

func newLiveHost(t *testing.T) *liveHost {
	t.Helper()
	testenv.Root(t, "a private mount namespace")
	if out, err := exec.Command(testenv.Tool(t, "unshare", "util-linux"), "-m", "true").CombinedOutput(); err != nil {
		t.Fatalf("no mount namespaces here (unshare -m: %v %s)", err, out)
	}
	h := &liveHost{dir: t.TempDir()}
	h.log = filepath.Join(h.dir, "systemctl.log")
	h.active = filepath.Join(h.dir, "active")
	for _, d := range []string{"opt", "varlib", "bin", "active"} {
		if err := os.MkdirAll(filepath.Join(h.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("cp", "-a", "/etc", filepath.Join(h.dir, "etc")).CombinedOutput(); err != nil {
		t.Fatalf("copy /etc: %v\n%s", err, out)
	}
	// is-active succeeds for units marked active in the test.
	fake := `#!/bin/sh
echo "$*" >> "$FAKE_SYSTEMCTL_LOG"
if [ "$1" = is-active ]; then
	[ -e "$FAKE_SYSTEMCTL_ACTIVE/$3" ]
	exit
fi
exit 0
`
	write(t, filepath.Join(h.dir, "bin", "systemctl"), []byte(fake), 0o755)
	return h
}

const liveWrapper = `set -e
mount --make-rprivate /
mount --bind "$LIVE/etc" /etc
mount --bind "$LIVE/opt" /opt
mount --bind "$LIVE/varlib" /var/lib
exec sh "$SCRIPT" "$@"
`

// run runs install.sh and returns its result and the systemctl calls it made.
func (h *liveHost) run(t *testing.T, args ...string) (result, []string) {
	t.Helper()
	os.Remove(h.log)
	script, err := filepath.Abs("install.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", append([]string{"-m", "sh", "-c", liveWrapper, "sh"}, args...)...)
	cmd.Env = append(os.Environ(), "LIVE="+h.dir, "SCRIPT="+script, "TMPDIR="+t.TempDir(),
		"PATH="+filepath.Join(h.dir, "bin")+":"+os.Getenv("PATH"),
		"FAKE_SYSTEMCTL_LOG="+h.log, "FAKE_SYSTEMCTL_ACTIVE="+h.active)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.stdout+r.stderr, testToken) {
		t.Errorf("install.sh printed the token:\n%s", r)
	}
	var calls []string
	if b, err := os.ReadFile(h.log); err == nil {
		calls = strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	return r, calls
}

func (h *liveHost) markActive(t *testing.T, units ...string) {
	t.Helper()
	for _, u := range units {
		write(t, filepath.Join(h.active, u), nil, 0o644)
	}
}

func liveFlags(t *testing.T, a *artifactSet) []string {
	return withoutFlag(withoutFlag(siteFlags(t, a, ""), "--root"), "--no-start")
}

// On a live host the script registers and starts the services, and later restarts only
// those whose files changed; uninstall disables them and removes the binaries.
func TestLiveInstallManagesServices(t *testing.T) {
	needMinisign(t)
	h := newLiveHost(t)
	a := completeArtifacts(t, "0.149.0")
	flags := liveFlags(t, a)
	const sup, upd = "otelcol-supervisor.service", "myriarch-updater.service"

	steps := []struct {
		name   string
		before func()
		flags  []string
		want   []string
	}{
		{"fresh install", nil, flags, []string{"daemon-reload",
			"enable --quiet " + sup, "restart " + sup, "enable --quiet " + upd, "restart " + upd}},
		{"re-run, services running", func() { h.markActive(t, sup, upd) }, flags, []string{
			"enable --quiet " + sup, "is-active --quiet " + sup, "enable --quiet " + upd, "is-active --quiet " + upd}},
		{"re-run, updater stopped", func() { os.Remove(filepath.Join(h.active, upd)) }, flags, []string{
			"enable --quiet " + sup, "is-active --quiet " + sup, "enable --quiet " + upd, "is-active --quiet " + upd, "start " + upd}},
		{"changed site flags", func() { h.markActive(t, upd) }, withFlag(flags, "--site-region", "south"), []string{
			"enable --quiet " + sup, "restart " + sup, "enable --quiet " + upd, "is-active --quiet " + upd}},
		{"uninstall", nil, []string{"--uninstall"}, []string{
			"disable --now " + upd, "disable --now " + sup, "daemon-reload"}},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		r, calls := h.run(t, s.flags...)
		if r.code != 0 {
			t.Fatalf("%s failed:\n%s", s.name, r)
		}
		if !slices.Equal(calls, s.want) {
			t.Errorf("%s: systemctl calls\n  %q\nwant\n  %q", s.name, calls, s.want)
		}
		if s.name == "fresh install" {
			for _, p := range []string{"etc/systemd/system/" + sup, "etc/systemd/system/" + upd,
				"etc/otelcol/supervisor.yaml", "etc/myriarch/updater.yaml", "etc/myriarch/token",
				"opt/myriarch/bin/opampsupervisor", "opt/myriarch/bin/myriarch-updater",
				"opt/myriarch/bin/myriarch-sigstore", "opt/myriarch/collector/current",
				"varlib/otelcol/supervisor", "varlib/myriarch-updater"} {
				if _, err := os.Lstat(filepath.Join(h.dir, p)); err != nil {
					t.Errorf("after install: %v", err)
				}
			}
			b, _ := os.ReadFile(filepath.Join(h.dir, "etc/systemd/system", sup))
			want, _ := os.ReadFile(filepath.Join(unitsDir, sup))
			if !bytes.Equal(b, want) {
				t.Errorf("live %s differs from the packaged unit", sup)
			}
		}
	}
	for _, p := range []string{"opt/myriarch", "etc/systemd/system/" + sup} {
		if _, err := os.Lstat(filepath.Join(h.dir, p)); !os.IsNotExist(err) {
			t.Errorf("after uninstall %s: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(h.dir, "etc/otelcol/supervisor.yaml")); err != nil {
		t.Errorf("uninstall without --purge removed the configuration: %v", err)
	}
}
