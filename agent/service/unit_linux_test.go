package service

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	kservice "github.com/kardianos/service"
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

func TestSystemdUnit(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path, unit := renderUnit(t, "/etc/myriarch/updater.yaml", exe)
	for _, want := range []string{
		"ExecStart=" + exe + ` "run" "--config" "/etc/myriarch/updater.yaml"` + "\n",
		"Restart=on-failure\n",
		"RestartSec=5\n",
		"KillMode=mixed\n",
		"StartLimitIntervalSec=0\n",
		"After=network-online.target\n",
		"WantedBy=multi-user.target\n",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed; unit content checked above")
	}
	// verify wants the unit under its real name; run it from a clean dir so
	// only this unit is loaded.
	out, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("systemd-analyze verify %s: %v\n%s\nunit:\n%s", path, err, out, unit)
	}
}

func TestSystemdUnitQuotesPaths(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "with space")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "myriarch-updater")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path, unit := renderUnit(t, "/etc/my riarch/updater.yaml", exe)
	if analyze, err := exec.LookPath("systemd-analyze"); err == nil {
		if out, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "" {
			t.Errorf("systemd-analyze verify: %v\n%s\nunit:\n%s", err, out, unit)
		}
	}
	if !strings.Contains(unit, `"/etc/my riarch/updater.yaml"`) {
		t.Errorf("config path with a space not quoted:\n%s", unit)
	}
}
