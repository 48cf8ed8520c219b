//go:build linux

package binary

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"aead.dev/minisign"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/install/installtest"
	"github.com/myriarch/myriarch/test/peers/peerbuild"
	"github.com/myriarch/myriarch/test/peers/peerrun"
)

// realSupervisor controls the real upstream OpAMP Supervisor (built by
// test/peers) as a child process, stopped with SIGINT.
type realSupervisor struct {
	bin, config, log string
	mu               sync.Mutex
	proc             *peerrun.Process
}

func (r *realSupervisor) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running() {
		return nil
	}
	p, err := peerrun.StartSupervisor(r.bin, r.config, r.log)
	if err != nil {
		return err
	}
	r.proc = p
	return nil
}

func (r *realSupervisor) Stop(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return nil
	}
	err := r.proc.Stop(20 * time.Second)
	r.proc = nil
	return err
}

func (r *realSupervisor) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running() {
		return 0
	}
	return r.proc.Pid()
}

func (r *realSupervisor) running() bool {
	if r.proc == nil {
		return false
	}
	select {
	case <-r.proc.Done():
		return false
	default:
		return true
	}
}

// TestRealSupervisorUpgradeAndRollback runs the engine against the real
// OpAMP Supervisor v0.149.0 and real collectors: m.1 → m.2 is installed
// from its signed release archive; the broken m.3 (passes `--version`, but
// the supervisor cannot bootstrap it) is rolled back to m.2.
func TestRealSupervisorUpgradeAndRollback(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the upstream OpAMP Supervisor and collectors; not in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	log := installtest.TestLogger(t)
	peers, err := peerbuild.Ensure(ctx, log)
	if err != nil {
		t.Fatalf("build peers: %v (run `make peers` first)", err)
	}
	m1, _ := peers.Collector(peerbuild.VersionM1)
	m2, _ := peers.Collector(peerbuild.VersionM2)
	broken, _ := peers.Collector(peerbuild.VersionBroken)
	exe := filepath.Base(m1.Executable)

	dir := t.TempDir()
	root, state, storage := filepath.Join(dir, "collector"), filepath.Join(dir, "state"), filepath.Join(dir, "storage")
	initDir := m1.Version + "-installer"
	if err := m1.InstallTo(filepath.Join(root, "versions", initDir, exe)); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join("versions", initDir), filepath.Join(root, "current"))
	cfgPath := filepath.Join(dir, "supervisor.yaml")
	err = peerrun.SupervisorConfig{
		ServerEndpoint: "ws://127.0.0.1:" + freePort(t) + "/v1/opamp", // nobody listens: local signals only
		Collector:      filepath.Join(root, "current", exe),
		StorageDir:     storage,
	}.WriteFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	ctl := &realSupervisor{bin: peers.Supervisor, config: cfgPath, log: filepath.Join(dir, "supervisor.log")}
	t.Cleanup(func() { ctl.Stop(context.Background()) })
	if err := ctl.Start(ctx); err != nil {
		t.Fatal(err)
	}

	pub, priv, _ := minisign.GenerateKey(nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, c := range []peerbuild.Collector{m2, broken} {
			if r.URL.Path == "/"+c.ArchiveName() {
				http.ServeFile(w, r, c.Archive)
				return
			}
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	offerOf := func(c peerbuild.Collector) *protobufs.PackagesAvailable {
		sum, _ := hex.DecodeString(c.ArchiveSHA256)
		sig, err := peerbuild.Sign(c.Archive, priv)
		if err != nil {
			t.Fatal(err)
		}
		return &protobufs.PackagesAvailable{AllPackagesHash: sum, Packages: map[string]*protobufs.PackageAvailable{pkg: {
			Type: protobufs.PackageType_PackageType_Addon, Version: c.Version, Hash: sum,
			File: &protobufs.DownloadableFile{DownloadUrl: srv.URL + "/" + c.ArchiveName(), ContentHash: sum, Signature: sig},
		}}}
	}

	bk, err := New(Options{Package: pkg, Root: root, Executable: exe, StorageDir: storage}, ctl)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := install.New(install.Options{HealthWindow: 5 * time.Second,
		MinisignPublicKeys: []string{pub.String()}, RequireSignature: true,
		StateDir: state, StartTimeout: 60 * time.Second}, log, bk)
	if err != nil {
		t.Fatal(err)
	}
	rec := installtest.NewRecorder()
	ectx, ecancel := context.WithCancel(ctx)
	t.Cleanup(func() { ecancel(); eng.Close() })
	if err := eng.Recover(ectx); err != nil {
		t.Fatal(err)
	}
	if st := lastStatus(t, eng); st.GetStatus() != stInstalled || st.AgentHasVersion != m1.Version {
		t.Fatalf("initial status %v, want Installed %s", st, m1.Version)
	}

	offer(eng, rec, offerOf(m2))
	st := rec.Wait(t, pkg, 3*time.Minute, func(s *protobufs.PackageStatus) bool { return terminal(s) && s.ServerOfferedVersion == m2.Version })
	if st.Status != stInstalled || st.AgentHasVersion != m2.Version {
		t.Fatalf("upgrade to m.2: %v", st)
	}
	m2Dir, _ := readCurrent(root)
	assertRuns := func(dirName string) {
		t.Helper()
		want := filepath.Join(root, "versions", dirName, exe)
		for _, c := range children(ctx, ctl.PID()) {
			if sameFile(c.Exe, want) {
				return
			}
		}
		t.Fatalf("the supervisor's collector does not run %s (children %v)", want, children(ctx, ctl.PID()))
	}
	assertRuns(m2Dir)

	offer(eng, rec, offerOf(broken))
	st = rec.Wait(t, pkg, 5*time.Minute, func(s *protobufs.PackageStatus) bool { return terminal(s) && s.ServerOfferedVersion == broken.Version })
	if st.Status != stFailed || !strings.Contains(st.ErrorMessage, "rolled back to "+m2.Version) || st.AgentHasVersion != m2.Version {
		t.Fatalf("broken collector: %v", st)
	}
	if cur, _ := readCurrent(root); cur != m2Dir {
		t.Fatalf("current -> %s after rollback, want %s", cur, m2Dir)
	}
	assertRuns(m2Dir)
	if _, err := os.Stat(filepath.Join(state, "failed", broken.Version, "agent.log")); err != nil {
		t.Fatalf("failed collector log not kept: %v", err)
	}
	t.Logf("rollback reason: %s", st.ErrorMessage)
}
