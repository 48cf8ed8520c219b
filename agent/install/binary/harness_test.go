//go:build linux || windows

package binary

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/install/installtest"
	"github.com/myriarch/myriarch/internal/testkit"
)

// fakeSupervisorBin is built once per test run from testdata/, or given
// prebuilt in FakeSupervisorEnv (a Windows test binary under Wine has no
// Go toolchain).
var fakeSupervisorBin string

// FakeSupervisorEnv names a fake supervisor built beforehand.
const FakeSupervisorEnv = "MYRIARCH_FAKE_SUPERVISOR"

func TestMain(m *testing.M) {
	if code, isChild := installtest.Child(fixture); isChild {
		os.Exit(code)
	}
	dir, err := os.MkdirTemp("", "myriarch-binary-test")
	if err != nil {
		panic(err)
	}
	if fakeSupervisorBin = os.Getenv(FakeSupervisorEnv); fakeSupervisorBin == "" {
		fakeSupervisorBin = filepath.Join(dir, "fakesupervisor"+exeSuffix)
		cmd := exec.Command("go", "build", "-o", fakeSupervisorBin, "./testdata/fakesupervisor")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			panic(fmt.Sprintf("building fakesupervisor: %v", err))
		}
	}
	if _, err := installtest.FakeCollector(); err != nil {
		panic(err)
	}
	code := testkit.RunChecked(m.Run)
	os.RemoveAll(dir)
	os.Exit(code)
}

// collectorBinary is the fake collector reporting version with behaviour mode.
func collectorBinary(version, mode string) []byte { return installtest.Binary(version, mode) }

const (
	exeName = "otelcol-contrib" + exeSuffix
	pkg     = "otelcol-contrib"
)

var (
	stInstalled  = protobufs.PackageStatusEnum_PackageStatusEnum_Installed
	stFailed     = protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed
	stPending    = protobufs.PackageStatusEnum_PackageStatusEnum_InstallPending
	stDownload   = protobufs.PackageStatusEnum_PackageStatusEnum_Downloading
	stInstalling = protobufs.PackageStatusEnum_PackageStatusEnum_Installing
)

// svcController runs the fake supervisor like a service manager would:
// detached (own session), tracked by a pid file, so another process (a
// restarted updater) can find and stop it.
type svcController struct {
	root, storage, pidfile, health string
	mu                             sync.Mutex
}

func (c *svcController) PID() int {
	b, err := os.ReadFile(c.pidfile)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 || !alive(pid) {
		return 0
	}
	return pid
}

func (c *svcController) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.PID() != 0 {
		return nil
	}
	args := []string{"-exe", filepath.Join(c.root, "current", exeName), "-log", filepath.Join(c.storage, "agent.log")}
	if c.health != "" {
		args = append(args, "-health", c.health)
	}
	cmd := exec.Command(fakeSupervisorBin, append(args, "-stopfile", c.pidfile+".stop")...)
	os.Remove(c.pidfile + ".stop")
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reap when we are the parent
	return os.WriteFile(c.pidfile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
}

func (c *svcController) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	pid := c.PID()
	if pid == 0 {
		return nil
	}
	if err := stopProcess(pid, c.pidfile+".stop"); err != nil {
		return err
	}
	os.Remove(c.pidfile)
	return nil
}

// env is one collector installation with a running fake supervisor and an
// artifact server: an installtest.Site.
type env struct {
	t                         testing.TB
	dir, root, state, storage string
	ctl                       *svcController
	srv                       *installtest.Server
	initialDir                string
}

var _ installtest.Site = (*env)(nil)

func newEnv(t testing.TB) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, dir: dir, root: filepath.Join(dir, "collector"), state: filepath.Join(dir, "state"),
		storage: filepath.Join(dir, "storage"), srv: installtest.NewServer(t)}
	for _, d := range []string{e.root, e.state, e.storage} {
		os.MkdirAll(d, 0o755)
	}
	// Initial install, as the site installer leaves it.
	e.initialDir = "0.148.0-00000000"
	vd := filepath.Join(e.root, "versions", e.initialDir)
	os.MkdirAll(vd, 0o755)
	if err := os.WriteFile(filepath.Join(vd, exeName), collectorBinary("0.148.0", "ok"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := initialCurrent(e.root, e.initialDir); err != nil {
		t.Fatal(err)
	}
	e.ctl = &svcController{root: e.root, storage: e.storage, pidfile: filepath.Join(dir, "supervisor.pid")}
	t.Cleanup(func() { e.ctl.Stop(context.Background()) })
	if err := e.ctl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitCollector(e.initialDir)
	return e
}

// siteConfig is what a child updater process needs to work on an env.
type siteConfig struct {
	Root, State, Storage, Pidfile, Health, PubKey, SupervisorBin string
	MaxSize                                                      int64 // collector.max_package_size, when set
}

func (e *env) Config(stateDir string) json.RawMessage {
	b, _ := json.Marshal(siteConfig{Root: e.root, State: stateDir, Storage: e.storage, Pidfile: e.ctl.pidfile,
		Health: e.ctl.health, PubKey: e.srv.PublicKey(), SupervisorBin: fakeSupervisorBin})
	return b
}

func (e *env) Versions() (string, string) { return "0.148.0", "0.149.0" }

func (e *env) Artifact(t testing.TB, version string, broken bool) []byte {
	if broken {
		return collectorBinary(version, "crash")
	}
	return collectorBinary(version, "ok")
}

func (e *env) Server() *installtest.Server { return e.srv }

func (e *env) Running(t testing.TB) (string, string) {
	t.Helper()
	deadline := time.Now().Add(10 * testSlow * time.Second)
	for {
		if sup := e.ctl.PID(); sup != 0 {
			if pid, exe := e.collectorChild(); pid != 0 {
				out, err := exec.Command(exe, "--version").Output()
				if err == nil {
					return fmt.Sprintf("supervisor %d collector %d", sup, pid), install.ParseVersion(string(out))
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no collector runs")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) Check(t testing.TB, stateDir string, isNew bool) {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(e.root, "versions"))
	var names []string
	for _, d := range ents {
		names = append(names, d.Name())
		if strings.HasSuffix(d.Name(), ".tmp") || strings.HasSuffix(d.Name(), ".hoist") {
			t.Errorf("half-written version directory left: %s", d.Name())
		}
	}
	cur := e.current()
	switch {
	case !isNew && (cur != e.initialDir || len(names) != 1):
		t.Errorf("current → %s, versions/ holds %v; want only %s", cur, names, e.initialDir)
	case isNew && (cur == e.initialDir || len(names) != 2):
		t.Errorf("current → %s, versions/ holds %v; want the new and the previous version", cur, names)
	}
	e.waitCollector(cur)
	if _, err := os.Lstat(filepath.Join(e.root, ".current.tmp")); err == nil {
		t.Error("a temporary link is left")
	}
}

func (e *env) InstalledFile() string { return InstalledFile }

// fixture is the binary back-end for the contract suite.
var fixture = &installtest.Fixture{
	Name: "binary", Package: pkg, Type: protobufs.PackageType_PackageType_Addon,
	CrashPoints: CrashPoints,
	Serial:      testSerial,
	NewSite:     func(t *testing.T) installtest.Site { return newEnv(t) },
	Engine: func(cfg json.RawMessage, log *slog.Logger, restart func(string), mod func(*install.Options)) (*install.Engine, error) {
		var c siteConfig
		if err := json.Unmarshal(cfg, &c); err != nil {
			return nil, err
		}
		if c.SupervisorBin != "" {
			fakeSupervisorBin = c.SupervisorBin
		}
		o := testOptions(c.State, c.PubKey)
		o.Download.FreeSpace = nil // the real disk-space check
		if c.MaxSize > 0 {
			o.MaxPackageSize = c.MaxSize
		}
		if mod != nil {
			mod(&o)
		}
		ctl := &svcController{root: c.Root, storage: c.Storage, pidfile: c.Pidfile, health: c.Health}
		b, err := New(Options{Package: pkg, Root: c.Root, Executable: exeName, StorageDir: c.Storage}, ctl)
		if err != nil {
			return nil, err
		}
		return install.New(o, log, b)
	},
	BadOffers: binaryBadOffers,
}

// testOptions: the health window (testHealthWindow, per system) leaves
// the fake collector's "crash" mode (exit 150 ms after its main starts)
// time to show itself even when the machine is so busy that a new process
// takes hundreds of milliseconds to reach its main (a cold build running
// beside the tests).
func testOptions(state, pub string) install.Options {
	return install.Options{
		StateDir: state, HealthWindow: testHealthWindow, MaxPackageSize: 64 << 20,
		MinisignPublicKeys: []string{pub}, RequireSignature: true,
		StartTimeout: 5 * testSlow * time.Second, PollInterval: 50 * time.Millisecond,
		Download: download.Options{
			Attempts: 3, BackoffBase: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
			IdleTimeout: 2 * time.Second, LowSpeedTime: 2 * time.Second, ProgressInterval: 100 * time.Millisecond,
			FreeSpace: func(string) (uint64, error) { return 1 << 40, nil },
		},
	}
}

// engineSetup is what an in-process engine of a test is built from.
type engineSetup struct {
	install install.Options
	binary  Options
}

// engine builds, recovers and returns an engine on the env, with a
// recorder for its statuses.
func (e *env) engine(mod func(*engineSetup)) (*install.Engine, *installtest.Recorder) {
	e.t.Helper()
	s := engineSetup{install: testOptions(e.state, e.srv.PublicKey()),
		binary: Options{Package: pkg, Root: e.root, Executable: exeName, StorageDir: e.storage}}
	if mod != nil {
		mod(&s)
	}
	b, err := New(s.binary, e.ctl)
	if err != nil {
		e.t.Fatal(err)
	}
	eng, err := install.New(s.install, installtest.TestLogger(e.t), b)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(func() { cancel(); eng.Close() })
	if err := eng.Recover(ctx); err != nil {
		e.t.Fatal(err)
	}
	return eng, installtest.NewRecorder()
}

// offer hands o to eng, its statuses to rec.
func offer(eng *install.Engine, rec *installtest.Recorder, o *protobufs.PackagesAvailable) {
	eng.HandlePackages(context.Background(), o, rec.Report)
}

func (e *env) signedOffer(version, path string, data []byte) *protobufs.PackagesAvailable {
	return installtest.Offer(pkg, protobufs.PackageType_PackageType_Addon, version, e.srv.Serve(path, data), data, e.srv.Sign(data))
}

// lastStatus is the engine's persisted status of the collector package.
func lastStatus(t testing.TB, eng *install.Engine) *protobufs.PackageStatus {
	t.Helper()
	st, err := eng.LastStatuses()
	if err != nil {
		t.Fatal(err)
	}
	return st.GetPackages()[pkg]
}

// collectorChild returns the supervisor's collector child (pid, exe).
func (e *env) collectorChild() (int32, string) {
	for _, c := range children(context.Background(), e.ctl.PID()) {
		return c.PID, c.Exe
	}
	return 0, ""
}

// waitCollector waits until the supervisor's child runs versions/<dir>.
func (e *env) waitCollector(dir string) int32 {
	e.t.Helper()
	want := filepath.Join(e.root, "versions", dir, exeName)
	deadline := time.Now().Add(10 * testSlow * time.Second)
	for time.Now().Before(deadline) {
		if pid, exe := e.collectorChild(); pid != 0 && (sameFile(exe, want) || e.runsCopy(exe, dir)) {
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	pid, exe := e.collectorChild()
	e.t.Fatalf("collector does not run %s (pid %d runs %q)", want, pid, exe)
	return 0
}

// runsCopy says whether exe is current's copy of versions/<dir> (Windows,
// where no junction can be made).
func (e *env) runsCopy(exe, dir string) bool {
	cur, err := readCurrent(e.root)
	return err == nil && cur == dir && sameFile(exe, filepath.Join(e.root, "current", exeName))
}

func (e *env) current() string {
	d, err := readCurrent(e.root)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func dirFor(version string, data []byte) string {
	sum := sha256.Sum256(data)
	return version + "-" + hex.EncodeToString(sum[:])[:8]
}

func tarGzOf(t testing.TB, files map[string][]byte, links map[string]string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, b := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(b)), Typeflag: tar.TypeReg})
		tw.Write(b)
	}
	for name, target := range links {
		tw.WriteHeader(&tar.Header{Name: name, Linkname: target, Typeflag: tar.TypeSymlink, Mode: 0o777})
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func terminal(st *protobufs.PackageStatus) bool {
	return st.Status == stInstalled || st.Status == stFailed
}
