package selfupdate

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/install/installtest"
	"github.com/myriarch/myriarch/internal/testkit"
)

func TestMain(m *testing.M) {
	if code, isChild := installtest.Child(fixture); isChild {
		os.Exit(code)
	}
	if runtime.GOOS != "windows" || os.Getenv(installtest.FakeCollectorEnv) != "" {
		if _, err := installtest.FakeCollector(); err != nil {
			panic(err)
		}
	}
	os.Exit(testkit.RunChecked(m.Run))
}

// TestContract runs the install contract suite against the self-update
// back-end: a real updater process SIGKILLed at every crash point (the
// binary it replaces is a stand-in), every bad offer refused with the
// binary untouched.
func TestContract(t *testing.T) {
	installtest.NeedStandIns(t)
	installtest.Run(t, fixture)
}

// site is an updater binary (the fake collector standing in for it) and an
// artifact server.
type site struct {
	exe string
	srv *installtest.Server
}

func newSite(t testing.TB) *site {
	dir := t.TempDir()
	s := &site{exe: filepath.Join(dir, "bin", exeName()), srv: installtest.NewServer(t)}
	if err := os.MkdirAll(filepath.Dir(s.exe), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.exe, installtest.Binary("0.1.0", "ok"), 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

type siteConfig struct{ Exe, State, PubKey string }

func (s *site) Config(stateDir string) json.RawMessage {
	b, _ := json.Marshal(siteConfig{Exe: s.exe, State: stateDir, PubKey: s.srv.PublicKey()})
	return b
}

func (s *site) Versions() (string, string) { return "0.1.0", "0.2.0" }

func (s *site) Artifact(t testing.TB, version string, broken bool) []byte {
	if broken {
		return installtest.Binary(version, "lies") // --version names it; the started updater another
	}
	return installtest.Binary(version, "ok")
}

func (s *site) Server() *installtest.Server { return s.srv }

func (s *site) Running(t testing.TB) (string, string) {
	t.Helper()
	b, err := os.ReadFile(s.exe)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), versionOf(t, s.exe, false)
}

// versionOf runs exe --version; running asks as a started updater reports
// its own version.
func versionOf(t testing.TB, exe string, running bool) string {
	cmd := exec.Command(exe, "--version")
	if running {
		cmd.Env = append(os.Environ(), "FAKECOL_RUNNING=1")
	}
	out, err := cmd.Output()
	if err != nil {
		if t != nil {
			t.Fatalf("%s --version: %v", exe, err)
		}
		return ""
	}
	return install.ParseVersion(string(out))
}

func (s *site) Check(t testing.TB, stateDir string, isNew bool) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(stateDir, "selfupdate", "pending.json")); err == nil {
		t.Error("the pending marker is left")
	}
	if ents, _ := filepath.Glob(filepath.Join(stateDir, install.StagingDir, "self-*")); len(ents) > 0 {
		t.Errorf("staged binaries are left: %v", ents)
	}
}

func (s *site) InstalledFile() string { return "" }

func testOptions(state, pub string) install.Options {
	return install.Options{
		StateDir: state, MinisignPublicKeys: []string{pub}, RequireSignature: true, MaxPackageSize: 64 << 20,
		Download: download.Options{Attempts: 3, BackoffBase: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
			IdleTimeout: 2 * time.Second, LowSpeedTime: 2 * time.Second, ProgressInterval: 100 * time.Millisecond},
	}
}

// engineFor builds the engine of an updater process running the binary at
// the site's executable: its version is what that binary reports.
func engineFor(cfg json.RawMessage, log *slog.Logger, restart func(string), mod func(*install.Options)) (*install.Engine, error) {
	var c siteConfig
	if err := json.Unmarshal(cfg, &c); err != nil {
		return nil, err
	}
	v := versionOf(nil, c.Exe, true)
	if v == "" {
		return nil, fmt.Errorf("%s reports no version", c.Exe)
	}
	b, err := NewBackend(Options{Version: v, Executable: c.Exe, RequestRestart: restart, StableFor: 300 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	o := testOptions(c.State, c.PubKey)
	if mod != nil {
		mod(&o)
	}
	return install.New(o, log, b)
}

var fixture = &installtest.Fixture{
	Name: "self", Package: install.SelfPackage, Type: protobufs.PackageType_PackageType_TopLevel,
	CrashPoints: CrashPoints,
	NewSite:     func(t *testing.T) installtest.Site { return newSite(t) },
	Engine:      engineFor,
	BadOffers: func(t *testing.T, st installtest.Site) []installtest.BadOffer {
		s := st.(*site)
		return []installtest.BadOffer{
			{Name: "binary prints another version", Want: `reports version "0.5.0"`, Quarantine: installtest.Blocked,
				Offer: func(testing.TB, installtest.Site) *protobufs.PackagesAvailable {
					data := installtest.Binary("0.5.0", "ok")
					return installtest.Offer(install.SelfPackage, protobufs.PackageType_PackageType_TopLevel, "0.4.0",
						s.srv.Serve("/other-version", data), data, s.srv.Sign(data))
				}},
			{Name: "the Sigstore verifier it carries prints another version", Want: helperName() + `: pre-activation version check failed: executable reports version "0.3.0"`, Quarantine: installtest.Blocked,
				Offer: func(t testing.TB, _ installtest.Site) *protobufs.PackagesAvailable {
					data := tarGzOf(t, map[string][]byte{exeName(): installtest.Binary("0.4.0", "ok"), helperName(): installtest.Binary("0.3.0", "ok")})
					return installtest.Offer(install.SelfPackage, protobufs.PackageType_PackageType_TopLevel, "0.4.0",
						s.srv.Serve("/helper-version", data), data, s.srv.Sign(data))
				}},
		}
	},
}

// tarGzOf packs executables (mode 0755) into a .tar.gz.
func tarGzOf(t testing.TB, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(body)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	gz.Close()
	return buf.Bytes()
}
