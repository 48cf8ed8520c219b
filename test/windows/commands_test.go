// Package windows runs the updater's Windows build under Wine (Debian's
// wine64 8, in a private prefix).
package windows

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/myriarch/myriarch/internal/testkit"
)

var shared struct {
	once sync.Once
	w    *wine
	dir  string
	exe  string // myriarch-updater.exe
}

func TestMain(m *testing.M) {
	os.Exit(testkit.RunChecked(func() int {
		code := m.Run()
		if shared.w != nil {
			shared.w.close() // before the check for processes left behind
			os.RemoveAll(shared.dir)
		}
		return code
	}))
}

// prefix is this run's Wine prefix with the Windows builds in it (the
// Wine tier is slow: -short leaves it out).
func prefix(t *testing.T) *wine {
	t.Helper()
	if testing.Short() {
		t.Skip("the Wine tier takes minutes: -short leaves it out")
	}
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "myriarch-wine-")
		if err != nil {
			t.Fatal(err)
		}
		shared.dir = dir
		shared.w = newWine(dir) // closed by TestMain, whatever boot does
		shared.w.boot(t)
		shared.w.persist(t)
		shared.exe = shared.w.build(t, "../../cmd/myriarch-updater", "myriarch-updater.exe")
	})
	if shared.exe == "" {
		t.Fatal("the Wine prefix was not made (see the first test's failure)")
	}
	return shared.w
}

// configPath is where the site installer puts the updater's configuration.
const configPath = `C:\ProgramData\Myriarch\updater.yaml`

func writeConfig(t *testing.T, w *wine) {
	t.Helper()
	p := w.drive(configPath)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "server:\n  endpoint: ws://127.0.0.1:1/v1/opamp\n  token: t\n" +
		"state_dir: C:\\ProgramData\\Myriarch\\state\n"
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The Windows build's commands run: version, help, validate of a
// configuration with Windows paths.
func TestUpdaterCommandsUnderWine(t *testing.T) {
	w := prefix(t)
	writeConfig(t, w)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"version"}, "myriarch-updater "},
		{[]string{"--help"}, "usage: myriarch-updater <command>"},
		{[]string{"validate", "--config", configPath}, `config C:\ProgramData\Myriarch\updater.yaml: valid`},
		{[]string{"status", "--config", configPath}, "service      not installed (windows-service)"},
	} {
		out, errs, err := w.run(t, shared.exe, tc.args...)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("%v: %v\nstdout:\n%s\nstderr:\n%s", tc.args, err, out, errs)
		}
	}
}
