package sitesetup_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/install/installtest"
	"github.com/myriarch/myriarch/agent/sitesetup"
	"github.com/myriarch/myriarch/agent/sitesetup/sitesetuptest"
	"github.com/myriarch/myriarch/internal/keyring/keyringtest"
	"github.com/myriarch/myriarch/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// site is a prefix to set up, its artifacts and their key.
type site struct {
	s   sitesetup.Settings
	key keyringtest.Key
	l   sitesetup.Layout
}

func newSite(t *testing.T, versions ...string) *site {
	t.Helper()
	dir := t.TempDir()
	key := keyringtest.NewKey(t)
	arts := filepath.Join(dir, "artifacts")
	if err := os.Mkdir(arts, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		sitesetuptest.Write(t, arts, key, v, sitesetuptest.Executables{Collector: installtest.Binary(v, "ok"),
			Supervisor: []byte("supervisor " + v), Updater: []byte("updater " + v), Sigstore: []byte("sigstore " + v)})
	}
	root := filepath.Join(dir, "root")
	return &site{key: key, l: sitesetup.NewLayout(root), s: sitesetup.Settings{Server: "wss://fleet.example.com:4320",
		Token: "tok.en-1", SiteID: "ams-01", SiteType: "store", SiteCountry: "NL", SiteTimezone: "Europe/Amsterdam",
		Environment: "production", Mode: "binary", CollectorVersion: versions[0], Artifacts: arts, MinisignKey: key.Text,
		Root: root, NoStart: true}}
}

// install runs the setup and returns what it said.
func (st *site) install(t *testing.T, s sitesetup.Settings) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := sitesetup.Install(context.Background(), s, &out)
	return out.String(), err
}

// tree lists every path under the prefix with its mode and content.
func (st *site) tree(t *testing.T) string {
	t.Helper()
	var lines []string
	filepath.WalkDir(st.s.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := os.Lstat(p)
		line := strings.TrimPrefix(p, st.s.Root) + " " + fi.Mode().String()
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			line += " -> " + target
		} else if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			line += " " + string(b[:min(len(b), 40)])
		}
		lines = append(lines, line)
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// A site set up under a prefix: everything in its place, the token and the
// Supervisor's configuration readable by their owner only, "current" on
// the version; the same settings again change nothing; a changed setting
// rewrites only its file; a new version is installed and switched to.
func TestInstallUnderAPrefix(t *testing.T) {
	st := newSite(t, "0.149.0", "0.150.0")
	out, err := st.install(t, st.s)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, w := range []string{"checked (SHA-256 and minisign): otelcol_0.149.0_windows_", "installed collector 0.149.0",
		"switched " + filepath.Join(st.l.CollDir, "current"), "wrote " + st.l.Token, "services not registered (--no-start)", "done: "} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if cur, err := os.Readlink(filepath.Join(st.l.CollDir, "current")); err != nil || filepath.Base(cur) != "0.149.0" {
		t.Fatalf("current: %q %v", cur, err)
	}
	for path, want := range map[string]fs.FileMode{st.l.Token: 0o600, st.l.SupConf: 0o600, st.l.UpdConf: 0o755, st.l.UpdExe: 0o755} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", path, fi.Mode(), err, want)
		}
	}
	if b, _ := os.ReadFile(st.l.Token); string(b) != "tok.en-1\n" {
		t.Errorf("token file: %q", b)
	}
	if b, _ := os.ReadFile(st.l.UpdExe); !strings.HasPrefix(string(b), "updater ") {
		t.Errorf("updater: %q", b)
	}
	// The updater takes the configuration as written, with the token.
	cfg, err := config.Load(st.l.UpdConf)
	if err != nil {
		b, _ := os.ReadFile(st.l.UpdConf)
		t.Fatalf("the updater refuses %s: %v\n%s", st.l.UpdConf, err, b)
	}
	if tok, err := config.ReadToken(cfg.Server.TokenFile); err != nil || tok != "tok.en-1" || cfg.Collector.Root != st.l.CollDir {
		t.Errorf("token %q %v, collector root %q", tok, err, cfg.Collector.Root)
	}
	before := st.tree(t)
	if out, err := st.install(t, st.s); err != nil || !strings.Contains(out, "nothing changed: the installation already matches these settings") {
		t.Fatalf("again: %v\n%s", err, out)
	}
	if after := st.tree(t); after != before {
		t.Fatalf("the same settings changed the host:\n%s\n---\n%s", before, after)
	}

	// A changed setting rewrites its file only.
	s := st.s
	s.SiteName = "Amsterdam Centraal"
	out, err = st.install(t, s)
	if err != nil || !strings.Contains(out, "wrote "+st.l.SupConf) || !strings.Contains(out, "done: 1 change(s)") {
		t.Fatalf("site name: %v\n%s", err, out)
	}
	// A dry run of a new version says what it would do and does nothing.
	s.CollectorVersion, s.DryRun = "0.150.0", true
	before = st.tree(t)
	out, err = st.install(t, s)
	if err != nil || !strings.Contains(out, "would unpack otelcol_0.150.0") || !strings.Contains(out, "would switch") ||
		!strings.Contains(out, "dry run: nothing was changed") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if after := st.tree(t); after != before {
		t.Fatalf("the dry run changed the host")
	}
	s.DryRun = false
	if out, err = st.install(t, s); err != nil || !strings.Contains(out, "installed collector 0.150.0") {
		t.Fatalf("0.150.0: %v\n%s", err, out)
	}
	if cur, _ := os.Readlink(filepath.Join(st.l.CollDir, "current")); filepath.Base(cur) != "0.150.0" {
		t.Fatalf("current after the new version: %q", cur)
	}
}

// A bad artifact (its digest, its signature, its archive, the version its
// collector reports) is refused naming it before anything is changed.
func TestBadArtifactsChangeNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, st *site)
		want  string
	}{
		{"digest", func(t *testing.T, st *site) {
			appendTo(t, filepath.Join(st.s.Artifacts, sitesetup.UpdaterArtifact()), "x")
		}, "artifact " + sitesetup.UpdaterArtifact() + ": SHA-256 mismatch"},
		{"signature by another key", func(t *testing.T, st *site) {
			other := keyringtest.NewKey(t)
			b, _ := os.ReadFile(filepath.Join(st.s.Artifacts, sitesetup.SupervisorArtifact()))
			sitesetuptest.WriteSigned(t, st.s.Artifacts, sitesetup.SupervisorArtifact(), b, other)
		}, "artifact " + sitesetup.SupervisorArtifact() + ": minisign signature does not verify with the given key"},
		{"missing", func(t *testing.T, st *site) {
			os.Remove(filepath.Join(st.s.Artifacts, sitesetup.SigstoreArtifact()))
		}, "artifact " + sitesetup.SigstoreArtifact() + ": not found"},
		{"no digest", func(t *testing.T, st *site) {
			os.WriteFile(filepath.Join(st.s.Artifacts, sitesetup.SigstoreArtifact()+".sha256"), []byte("nope\n"), 0o644)
		}, ".sha256 holds no SHA-256 digest"},
		{"not a zip", func(t *testing.T, st *site) {
			sitesetuptest.WriteSigned(t, st.s.Artifacts, sitesetup.CollectorArtifact("0.149.0"), []byte("not an archive"), st.key)
		}, "artifact " + sitesetup.CollectorArtifact("0.149.0") + ": unpack"},
		{"archive that climbs out", func(t *testing.T, st *site) {
			var z bytes.Buffer
			zw := zip.NewWriter(&z)
			for name, body := range map[string][]byte{sitesetup.CollectorExe: installtest.Binary("0.149.0", "ok"), "../../escape": []byte("x")} {
				w, err := zw.Create(name)
				if err != nil {
					t.Fatal(err)
				}
				w.Write(body)
			}
			zw.Close()
			sitesetuptest.WriteSigned(t, st.s.Artifacts, sitesetup.CollectorArtifact("0.149.0"), z.Bytes(), st.key)
		}, "climbs out with .."},
		{"mislabelled", func(t *testing.T, st *site) {
			other := t.TempDir()
			sitesetuptest.Write(t, other, st.key, "0.149.0", sitesetuptest.Executables{Collector: installtest.Binary("0.148.0", "ok")})
			b, _ := os.ReadFile(filepath.Join(other, sitesetup.CollectorArtifact("0.149.0")))
			sitesetuptest.WriteSigned(t, st.s.Artifacts, sitesetup.CollectorArtifact("0.149.0"), b, st.key)
		}, `--version reports "0.148.0", not 0.149.0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newSite(t, "0.149.0")
			tc.spoil(t, st)
			out, err := st.install(t, st.s)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing was installed") {
				t.Fatalf("%v, want %q\n%s", err, tc.want, out)
			}
			if _, err := os.Stat(st.s.Root); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the prefix was touched: %v", err)
			}
		})
	}
}

func appendTo(t *testing.T, path, s string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(s)
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Uninstall removes the executables and the collector and keeps the
// configuration; with purge that too.
func TestUninstall(t *testing.T) {
	st := newSite(t, "0.149.0")
	if out, err := st.install(t, st.s); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var out bytes.Buffer
	if err := sitesetup.Uninstall(st.s, false, &out); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{st.l.CollDir, st.l.UpdExe, st.l.SupExe, st.l.SigExe, st.l.ProgDir} {
		if _, err := os.Lstat(gone); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there", gone)
		}
	}
	for _, kept := range []string{st.l.UpdConf, st.l.SupConf, st.l.Token} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("%s: %v", kept, err)
		}
	}
	if !strings.Contains(out.String(), "kept configuration and data") {
		t.Errorf("output:\n%s", out.String())
	}
	out.Reset()
	if err := sitesetup.Uninstall(st.s, true, &out); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{st.l.EtcM, st.l.SupConf, st.l.Storage} {
		if _, err := os.Lstat(gone); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there after --purge", gone)
		}
	}
}

// The configurations as the setup writes them.
func TestConfigurationsGolden(t *testing.T) {
	s := sitesetup.Settings{Server: "wss://fleet.example.com:4320", Token: "tok.en-1", SiteID: "ams-01", SiteType: "store",
		SiteName: `Amsterdam "C"`, SiteCountry: "NL", SiteRegion: "Noord-Holland", SiteTimezone: "Europe/Amsterdam",
		Environment: "production", CollectorVersion: "0.149.0", MinisignKey: "RWkey", RootKey: "RWroot",
		CatalogMirrors: []string{"*.mirror.example.com"}}
	l := sitesetup.NewLayout(`/site`)
	for _, mode := range []string{"binary", "container"} {
		s.Mode = mode
		for name, got := range map[string]string{"supervisor": sitesetup.SupervisorYAML(&s, l), "updater": sitesetup.UpdaterYAML(&s, l)} {
			testkit.Golden(t, filepath.Join("testdata", name+"-"+mode+".yaml"), got, *update)
		}
	}
}
