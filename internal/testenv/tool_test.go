package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records a failure instead of ending the test.
type recorder struct {
	testing.TB
	failed, skipped string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Fatalf(format string, a ...any) { r.failed = fmt.Sprintf(format, a...) }
func (r *recorder) Skipf(format string, a ...any)  { r.skipped = fmt.Sprintf(format, a...) }
func (r *recorder) Cleanup(func())                 {}

func TestMissingToolFailsWithItsInstallCommand(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	cases := []struct {
		name string
		call func(tb testing.TB)
		want []string
	}{
		{"tool", func(tb testing.TB) { Tool(tb, "no-such-tool", "no-such-package") },
			[]string{"no-such-tool is not installed", "apt-get install -y no-such-package", SetupCommand}},
		{"file", func(tb testing.TB) { File(tb, filepath.Join(t.TempDir(), "missing.tab"), "tzdata") },
			[]string{"missing.tab", "apt-get install -y tzdata"}},
		{"chromium", func(tb testing.TB) { Chromium(tb) },
			[]string{"chromium is not installed", "apt-get install -y chromium", SetupCommand}},
		{"docker", func(tb testing.TB) {
			t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "none.sock"))
			Docker(tb)
		},
			[]string{"no Docker engine answers", "none.sock", "test/docker/up.sh"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{TB: t}
			c.call(r)
			if r.skipped != "" {
				t.Fatalf("skipped (%s); a missing tool must fail the test", r.skipped)
			}
			for _, w := range c.want {
				if !strings.Contains(r.failed, w) {
					t.Errorf("failure %q lacks %q", r.failed, w)
				}
			}
		})
	}
}

func TestPresentToolPasses(t *testing.T) {
	r := &recorder{TB: t}
	if p := Tool(r, "sh", "dash"); p == "" || r.failed != "" {
		t.Fatalf("Tool(sh) = %q, failure %q", p, r.failed)
	}
}

// test/setup.sh run by a user who cannot install: it installs nothing and prints the
// one apt-get command that would.
func TestSetupScriptNotRootPrintsInstallCommand(t *testing.T) {
	Root(t, "switching to an unprivileged user")
	// A directory the unprivileged user can enter (t.TempDir's are private to root).
	bin, err := os.MkdirTemp("", "setup-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// Only what the script itself runs: no minisign, shellcheck, docker ...
	for _, name := range []string{"bash", "id", "dirname"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	// A copy the user can read wherever the checkout is.
	src, err := os.ReadFile("../../test/setup.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(bin, "setup.sh")
	if err := os.WriteFile(script, src, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Tool(t, "setpriv", "util-linux"), "--reuid=65534", "--regid=65534", "--clear-groups",
		filepath.Join(bin, "bash"), script)
	cmd.Env = []string{"PATH=" + bin}
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "not found") {
		t.Fatalf("the script ran a command the test did not provide:\n%s", out)
	}
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit %d (%v), want 1:\n%s", code, err, out)
	}
	line := ""
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "apt-get install") {
			line = strings.TrimSpace(l)
		}
	}
	if !strings.HasPrefix(line, "sudo apt-get install -y ") {
		t.Fatalf("no install command in:\n%s", out)
	}
	for _, pkg := range []string{"minisign", "shellcheck", "systemd", "docker.io", "chromium"} {
		if !strings.Contains(" "+line+" ", " "+pkg+" ") {
			t.Errorf("install command %q lacks %s", line, pkg)
		}
	}
	if strings.Count(line, "docker.io") != 1 {
		t.Errorf("a package is named twice: %q", line)
	}
}
