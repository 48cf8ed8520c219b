//go:build linux

package installer_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/myriarch/myriarch/agent/service"
)

// install.sh writes the updater's unit that `myriarch-updater install` writes and the
// package ships: agent/service's rendering for the paths under its root, in both modes.
func TestUpdaterUnitIsTheServiceRendering(t *testing.T) {
	needMinisign(t)
	a := completeArtifacts(t, "0.149.0")
	modes := []struct {
		name  string
		flags func(root string) []string
	}{
		{"binary", func(root string) []string { return siteFlags(t, a, root) }},
		{"container", func(root string) []string {
			return withFlag(withoutFlag(siteFlags(t, a, root), "--collector-version"), "--mode", "container")
		}},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			if r := runScript(t, m.flags(root)...); r.code != 0 {
				t.Fatalf("install failed:\n%s", r)
			}
			path := filepath.Join(root, "etc/systemd/system/myriarch-updater.service")
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := service.SystemdUnit(filepath.Join(root, "opt/myriarch/bin/myriarch-updater"),
				filepath.Join(root, "etc/myriarch/updater.yaml"))
			if string(got) != want {
				t.Errorf("%s differs from service.SystemdUnit for its paths:\n%s\nwant:\n%s", path, got, want)
			}
			systemdVerify(t, path)
		})
	}
}
