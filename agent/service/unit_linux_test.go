package service

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	kservice "github.com/kardianos/service"

	"github.com/myriarch/myriarch/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite packaging/systemd/myriarch-updater.service from SystemdUnit")

// packagedUnit is SystemdUnit's rendering for the package's paths.
const packagedUnit = "../../packaging/systemd/myriarch-updater.service"

const (
	defaultExecutable = "/opt/myriarch/bin/myriarch-updater"
	defaultConfig     = "/etc/myriarch/updater.yaml"
)

// renderUnit has kardianos itself install the unit, as the systemd
// implementation does on a real host, but as a user service under a
// temporary HOME and with a stand-in systemctl, so nothing on this machine
// changes. It returns the unit file's path and content.
func renderUnit(t *testing.T, configPath, executable string) (string, string) {
	t.Helper()
	var systemd kservice.System
	for _, s := range kservice.AvailableSystems() {
		if s.String() == "linux-systemd" {
			systemd = s
		}
	}
	if systemd == nil {
		t.Fatal("kardianos has no linux-systemd implementation")
	}
	home := t.TempDir()
	bin := t.TempDir()
	fake := "#!/bin/sh\ncase \"$1\" in --version) echo 'systemd 252 (252.30-1)';; esac\nexit 0\n"
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	cfg := Config(configPath, executable)
	cfg.Option["UserService"] = true
	svc, err := systemd.New(idle{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Install(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, ".config/systemd/user", Name+".service")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, string(b)
}

// systemdVerify loads a unit as systemd would; any output (unknown keys, bad values, an
// ExecStart binary that does not exist) is a failure.
func systemdVerify(t *testing.T, path string) {
	t.Helper()
	sa := testenv.Tool(t, "systemd-analyze", "systemd")
	out, err := exec.Command(sa, "verify", "--man=no", path).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		b, _ := os.ReadFile(path)
		t.Errorf("systemd-analyze verify %s: %v\n%s\nunit:\n%s", path, err, out, b)
	}
}

// The packaged unit is the rendering for the default paths (go test -update rewrites it).
func TestPackagedUnitIsTheRendering(t *testing.T) {
	got := SystemdUnit(defaultExecutable, defaultConfig)
	if *update {
		if err := os.WriteFile(packagedUnit, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(packagedUnit)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs from SystemdUnit(%q, %q) (go test ./agent/service -update rewrites it); rendering:\n%s",
			packagedUnit, defaultExecutable, defaultConfig, got)
	}
}

// executableAt writes a stand-in updater binary at dir/name.
func executableAt(t *testing.T, dir, name string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, name)
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

// `myriarch-updater install` writes exactly SystemdUnit through kardianos, and the unit
// verifies, for plain paths and for paths systemd needs quoted or escaped: verify finds
// the binary only if ExecStart names it right.
func TestInstalledUnitIsTheRendering(t *testing.T) {
	cases := []struct {
		name, dir, exe, config string
		execStart, condition   string // in the unit (@DIR@ is the executable's directory)
	}{
		{name: "default layout", dir: "bin", exe: "myriarch-updater", config: defaultConfig,
			execStart: "@DIR@/myriarch-updater run --config /etc/myriarch/updater.yaml",
			condition: "/etc/myriarch/updater.yaml"},
		{name: "blanks", dir: "with space", exe: "myriarch-updater", config: "/etc/my riarch/updater.yaml",
			execStart: `"@DIR@/myriarch-updater" run --config "/etc/my riarch/updater.yaml"`,
			condition: "/etc/my riarch/updater.yaml"},
		// Variables are expanded in arguments only.
		{name: "specifiers and variables", dir: "100%$HOME", exe: "myriarch-updater", config: "/etc/50%/$USER.yaml",
			execStart: "@DIR@/myriarch-updater run --config /etc/50%%/$$USER.yaml",
			condition: "/etc/50%%/$USER.yaml"},
		// systemd refuses them in the program path.
		{name: "quotes and backslashes", dir: "bin", exe: "myriarch-updater", config: `/etc/"x"\y's.yaml`,
			execStart: `@DIR@/myriarch-updater run --config "/etc/\"x\"\\y's.yaml"`,
			condition: `/etc/"x"\y's.yaml`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), c.dir)
			exe := executableAt(t, dir, c.exe)
			path, unit := renderUnit(t, c.config, exe)
			if want := SystemdUnit(exe, c.config); unit != want {
				t.Errorf("installed unit differs from SystemdUnit:\n%s\nwant:\n%s", unit, want)
			}
			dirInUnit := strings.ReplaceAll(dir, "%", "%%")
			for _, want := range []string{
				"ExecStart=" + strings.ReplaceAll(c.execStart, "@DIR@", dirInUnit) + "\n",
				"ConditionPathExists=" + c.condition + "\n",
			} {
				if !strings.Contains(unit, want) {
					t.Errorf("unit lacks %q:\n%s", want, unit)
				}
			}
			systemdVerify(t, path)
		})
	}
}

func TestUnitKeepsWhatTheUpdaterNeeds(t *testing.T) {
	unit := SystemdUnit(defaultExecutable, defaultConfig)
	for _, want := range []string{
		"ConditionPathExists=/etc/myriarch/updater.yaml\n",
		"StartLimitIntervalSec=0\n",
		"Restart=on-failure\n",
		"RestartSec=5s\n",
		"KillMode=mixed\n",
		"After=network-online.target\n",
		"NoNewPrivileges=yes\n",
		"ProtectSystem=full\n",
		"ProtectHome=read-only\n",
		"PrivateTmp=yes\n",
		"WantedBy=multi-user.target\n",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
}

// A line break in a path cannot add a line to the unit.
func TestLineBreaksStayInTheirSetting(t *testing.T) {
	unit := SystemdUnit("/opt/x\nExecStartPre=/bin/false/updater", "/etc/y\nUser=nobody.yaml")
	for _, line := range strings.Split(unit, "\n") {
		if strings.HasPrefix(line, "ExecStartPre=") || strings.HasPrefix(line, "User=") {
			t.Errorf("a path added the line %q:\n%s", line, unit)
		}
	}
	if !strings.Contains(unit, `ExecStart="/opt/x\nExecStartPre=/bin/false/updater" run --config "/etc/y\nUser=nobody.yaml"`) {
		t.Errorf("ExecStart not escaped:\n%s", unit)
	}
}

// An empty executable is the running binary, as for kardianos.
func TestConfigDefaultsToTheRunningBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config(defaultConfig, "")
	if cfg.Executable != exe {
		t.Errorf("Executable %q, want %q", cfg.Executable, exe)
	}
	if got, want := cfg.Option["SystemdScript"], SystemdUnit(exe, defaultConfig); got != want {
		t.Errorf("SystemdScript is not SystemdUnit of the running binary:\n%s", got)
	}
	if len(cfg.Dependencies) != 0 {
		t.Errorf("Dependencies %q: on Windows they name services to wait for", cfg.Dependencies)
	}
}
