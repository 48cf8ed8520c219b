//go:build linux

package binary

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"aead.dev/minisign"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// Binaries built once per test run from testdata/.
var (
	fakeCollectorBin  []byte
	fakeSupervisorBin string
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	dir, err := os.MkdirTemp("", "myriarch-install-test")
	if err != nil {
		panic(err)
	}
	build := func(pkg, out string) {
		cmd := exec.Command("go", "build", "-o", out, "./testdata/"+pkg)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			panic(fmt.Sprintf("building %s: %v", pkg, err))
		}
	}
	build("fakecollector", filepath.Join(dir, "fakecollector"))
	build("fakesupervisor", filepath.Join(dir, "fakesupervisor"))
	fakeCollectorBin, err = os.ReadFile(filepath.Join(dir, "fakecollector"))
	if err != nil {
		panic(err)
	}
	fakeSupervisorBin = filepath.Join(dir, "fakesupervisor")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// collectorBinary is the fake collector reporting version with behaviour mode.
func collectorBinary(version, mode string) []byte {
	b := append([]byte{}, fakeCollectorBin...)
	return append(b, []byte("\nFAKECOL:"+version+":"+mode+"\n")...)
}

const exeName = "otelcol-contrib"

// svcController runs the fake supervisor like a service manager would:
// detached (own session), tracked by a pid file, so another process (a
// restarted updater) can find and stop it.
type svcController struct {
	root, storage, pidfile, health string
	mu                             sync.Mutex
	starts, stops                  int
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

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i > 0 && len(s) > i+2 {
		return s[i+2] != 'Z'
	}
	return true
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
	cmd := exec.Command(fakeSupervisorBin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reap when we are the parent
	c.starts++
	return os.WriteFile(c.pidfile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
}

func (c *svcController) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	pid := c.PID()
	if pid == 0 {
		return nil
	}
	c.stops++
	syscall.Kill(pid, syscall.SIGINT)
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(-pid, syscall.SIGKILL)
			return fmt.Errorf("supervisor %d did not stop on SIGINT", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	os.Remove(c.pidfile)
	return nil
}

// recorder is a Reporter that keeps every status set.
type recorder struct {
	mu   sync.Mutex
	all  []*protobufs.PackageStatuses
	last *protobufs.PackageStatuses
	ch   chan struct{}
}

func newRecorder() *recorder { return &recorder{ch: make(chan struct{}, 1)} }

func (r *recorder) SetPackageStatuses(s *protobufs.PackageStatuses) error {
	r.mu.Lock()
	r.all = append(r.all, s)
	r.last = s
	r.mu.Unlock()
	select {
	case r.ch <- struct{}{}:
	default:
	}
	return nil
}

// wait returns the first status of pkg satisfying ok, failing after timeout.
func (r *recorder) wait(t testing.TB, pkg string, timeout time.Duration, ok func(*protobufs.PackageStatus) bool) *protobufs.PackageStatus {
	t.Helper()
	deadline := time.After(timeout)
	for {
		r.mu.Lock()
		var last *protobufs.PackageStatus
		if r.last != nil {
			last = r.last.GetPackages()[pkg]
		}
		r.mu.Unlock()
		if last != nil && ok(last) {
			return last
		}
		select {
		case <-r.ch:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timeout waiting for a status of %s; last: %v", pkg, last)
		}
	}
}

func (r *recorder) sawStatus(pkg string, s protobufs.PackageStatusEnum) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, all := range r.all {
		if st := all.GetPackages()[pkg]; st != nil && st.Status == s {
			return true
		}
	}
	return false
}

func terminal(st *protobufs.PackageStatus) bool {
	return st.Status == protobufs.PackageStatusEnum_PackageStatusEnum_Installed ||
		st.Status == protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed
}

// env is one collector installation with a running fake supervisor and an
// artifact server.
type env struct {
	t                         testing.TB
	dir, root, state, storage string
	ctl                       *svcController
	srv                       *httptest.Server
	pub                       minisign.PublicKey
	priv                      minisign.PrivateKey
	mu                        sync.Mutex
	files                     map[string]http.HandlerFunc
	hits                      map[string]int
	initialDir                string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, dir: dir, root: filepath.Join(dir, "collector"), state: filepath.Join(dir, "state"),
		storage: filepath.Join(dir, "storage"), files: map[string]http.HandlerFunc{}, hits: map[string]int{}}
	for _, d := range []string{e.root, e.state, e.storage} {
		os.MkdirAll(d, 0o755)
	}
	e.pub, e.priv, _ = minisign.GenerateKey(nil)
	// Initial install, as the site installer leaves it.
	e.initialDir = "0.148.0-00000000"
	vd := filepath.Join(e.root, "versions", e.initialDir)
	os.MkdirAll(vd, 0o755)
	if err := os.WriteFile(filepath.Join(vd, exeName), collectorBinary("0.148.0", "ok"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join("versions", e.initialDir), filepath.Join(e.root, "current"))
	e.ctl = &svcController{root: e.root, storage: e.storage, pidfile: filepath.Join(dir, "supervisor.pid")}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		h := e.files[r.URL.Path]
		e.hits[r.URL.Path]++
		e.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(func() {
		e.ctl.Stop(context.Background())
		e.srv.Close()
	})
	if err := e.ctl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitCollector(e.initialDir)
	return e
}

func (e *env) serve(path string, data []byte) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.files[path] = func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "artifact", time.Time{}, bytes.NewReader(data))
	}
	return e.srv.URL + path
}

func (e *env) handle(path string, h http.HandlerFunc) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.files[path] = h
	return e.srv.URL + path
}

func (e *env) hitCount(path string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hits[path]
}

func (e *env) options() Options { return testOptions(e.root, e.state, e.storage, e.pub.String()) }

func testOptions(root, state, storage, pub string) Options {
	return Options{
		Package: "otelcol-contrib", Root: root, Executable: exeName,
		HealthWindow: 400 * time.Millisecond, MaxPackageSize: 64 << 20,
		MinisignPublicKeys: []string{pub}, RequireSignature: true,
		StateDir: state, StorageDir: storage,
		StartTimeout: 5 * time.Second, PollInterval: 50 * time.Millisecond,
		Download: fastDownload(),
	}
}

func (e *env) engine(mod func(*Options)) (*Engine, *recorder) {
	e.t.Helper()
	o := e.options()
	if mod != nil {
		mod(&o)
	}
	rec := newRecorder()
	eng, err := New(o, e.ctl, rec, slog.New(slog.NewTextHandler(testWriter{e.t}, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(func() { cancel(); eng.Close() })
	if err := eng.Recover(ctx); err != nil {
		e.t.Fatal(err)
	}
	return eng, rec
}

// sign returns the pre-hashed minisign signature of data.
func (e *env) sign(data []byte) []byte {
	r := minisign.NewReader(bytes.NewReader(data))
	io.Copy(io.Discard, r)
	return r.Sign(e.priv)
}

// offer builds a PackagesAvailable with one collector package. Its
// PackageAvailable.hash differs from the content hash (as myriarchd's does),
// so tests tell which one a status reports.
func offer(name, version, url string, data, sig []byte) *protobufs.PackagesAvailable {
	sum := sha256.Sum256(data)
	return &protobufs.PackagesAvailable{
		AllPackagesHash: []byte("all-" + version),
		Packages: map[string]*protobufs.PackageAvailable{name: {
			Type: protobufs.PackageType_PackageType_Addon, Version: version, Hash: offerHashOf(version, sum[:]),
			File: &protobufs.DownloadableFile{DownloadUrl: url, ContentHash: sum[:], Signature: sig},
		}},
	}
}

// offerHashOf is the PackageAvailable.hash the test offers give content.
func offerHashOf(version string, content []byte) []byte {
	h := sha256.Sum256([]byte("offer " + version + " " + hex.EncodeToString(content)))
	return h[:]
}

func (e *env) signedOffer(version, path string, data []byte) *protobufs.PackagesAvailable {
	return offer("otelcol-contrib", version, e.serve(path, data), data, e.sign(data))
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
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if pid, exe := e.collectorChild(); pid != 0 && sameFile(exe, want) {
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	pid, exe := e.collectorChild()
	e.t.Fatalf("collector does not run %s (pid %d runs %q)", want, pid, exe)
	return 0
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

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
