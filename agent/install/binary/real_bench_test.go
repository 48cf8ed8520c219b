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
	"github.com/shirou/gopsutil/v4/process"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/install/installtest"
	"github.com/myriarch/myriarch/test/peers/peerbuild"
	"github.com/myriarch/myriarch/test/peers/peerrun"
)

// realCollectorUp polls (5 ms) until the supervisor's real collector run
// (the one started with effective.yaml, not the bootstrap runs) executes exe.
func realCollectorUp(ctl Controller, exe string, timeout time.Duration) time.Time {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if pid := ctl.PID(); pid != 0 {
			for _, c := range children(context.Background(), pid) {
				if !sameFile(c.Exe, exe) {
					continue
				}
				p, err := process.NewProcess(c.PID)
				if err != nil {
					continue
				}
				if cl, err := p.Cmdline(); err == nil && strings.Contains(cl, "effective.yaml") {
					return time.Now()
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Time{}
}

// BenchmarkRealSwapDowntime: collector downtime during an upgrade under the
// real OpAMP Supervisor (stop issued → the new collector's real run is up),
// against a plain supervisor restart of the same version. Versions
// alternate m.1 ↔ m.2 (downgrades allowed for the benchmark).
func BenchmarkRealSwapDowntime(b *testing.B) {
	ctx := context.Background()
	peers, err := peerbuild.Ensure(ctx, nil)
	if err != nil {
		b.Fatalf("build peers: %v", err)
	}
	m1, _ := peers.Collector(peerbuild.VersionM1)
	m2, _ := peers.Collector(peerbuild.VersionM2)
	exe := filepath.Base(m1.Executable)
	dir := b.TempDir()
	root, state, storage := filepath.Join(dir, "collector"), filepath.Join(dir, "state"), filepath.Join(dir, "storage")
	m1.InstallTo(filepath.Join(root, "versions", "init", exe))
	os.Symlink(filepath.Join("versions", "init"), filepath.Join(root, "current"))
	cfgPath := filepath.Join(dir, "supervisor.yaml")
	peerrun.SupervisorConfig{ServerEndpoint: "ws://127.0.0.1:" + freePort(b) + "/v1/opamp",
		Collector: filepath.Join(root, "current", exe), StorageDir: storage}.WriteFile(cfgPath)
	ctl := &realSupervisor{bin: peers.Supervisor, config: cfgPath, log: filepath.Join(dir, "supervisor.log")}
	b.Cleanup(func() { ctl.Stop(ctx) })
	ctl.Start(ctx)
	pub, priv, _ := minisign.GenerateKey(nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, c := range []peerbuild.Collector{m1, m2} {
			if r.URL.Path == "/"+c.ArchiveName() {
				http.ServeFile(w, r, c.Archive)
				return
			}
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	var mu sync.Mutex
	marks := map[string]time.Time{}
	bk, err := New(Options{Package: pkg, Root: root, Executable: exe, StorageDir: storage}, ctl)
	if err != nil {
		b.Fatal(err)
	}
	eng, err := install.New(install.Options{HealthWindow: 2 * time.Second,
		MinisignPublicKeys: []string{pub.String()}, RequireSignature: true, AllowDowngrade: true,
		StateDir: state, StartTimeout: 60 * time.Second,
		Observe: func(s string) { mu.Lock(); marks[s] = time.Now(); mu.Unlock() }}, nil, bk)
	if err != nil {
		b.Fatal(err)
	}
	rec := installtest.NewRecorder()
	ectx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); eng.Close() }()
	eng.Recover(ectx)
	if realCollectorUp(ctl, filepath.Join(root, "versions", "init", exe), time.Minute).IsZero() {
		b.Fatal("initial collector not up")
	}
	var swap, restart time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cur, _ := readCurrent(root)
		curExe := filepath.Join(root, "versions", cur, exe)
		t0 := time.Now()
		ctl.Stop(ctx)
		ctl.Start(ctx)
		t1 := realCollectorUp(ctl, curExe, time.Minute)
		if t1.IsZero() {
			b.Fatal("collector not back after a plain restart")
		}
		restart += t1.Sub(t0)

		c := []peerbuild.Collector{m2, m1}[i%2]
		sum, _ := hex.DecodeString(c.ArchiveSHA256)
		sig, _ := peerbuild.Sign(c.Archive, priv)
		newExe := filepath.Join(root, "versions", c.Version+"-"+c.ArchiveSHA256[:8], exe)
		up := make(chan time.Time, 1)
		go func() {
			waitMark(&mu, marks, cpActivating)
			up <- realCollectorUp(ctl, newExe, time.Minute)
		}()
		offer(eng, rec, &protobufs.PackagesAvailable{AllPackagesHash: sum, Packages: map[string]*protobufs.PackageAvailable{pkg: {
			Type: protobufs.PackageType_PackageType_Addon, Version: c.Version, Hash: sum,
			File: &protobufs.DownloadableFile{DownloadUrl: srv.URL + "/" + c.ArchiveName(), ContentHash: sum, Signature: sig},
		}}})
		t2 := <-up
		st := rec.Wait(b, pkg, 3*time.Minute, func(s *protobufs.PackageStatus) bool {
			return terminal(s) && s.ServerOfferedVersion == c.Version
		})
		if st.Status != stInstalled || t2.IsZero() {
			b.Fatalf("install %d: %v", i, st)
		}
		mu.Lock()
		swap += t2.Sub(marks[cpActivating])
		clear(marks)
		mu.Unlock()
	}
	reportDowntime(b, swap, restart)
}
