package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"

	"github.com/myriarch/myriarch/internal/providerwire"
	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/test/e2e/site"
)

// BenchmarkIdleRSS builds the stripped binary the way `make build` does,
// runs `myriarch-updater run` against an opamp-go server on 127.0.0.1 and
// reports its resident memory after it has connected and idled, plus the
// binary size. It measures; the goals (≤ 15 MB RSS, ≤ 20 MB binary) are
// tracked in BENCHMARKS.md, not asserted here. The docker provider is off
// (BenchmarkIdleRSSDocker measures it).
func BenchmarkIdleRSS(b *testing.B) {
	u := startBenchUpdater(b, "providers: {docker: {enabled: false}}\n", nil)
	time.Sleep(10 * time.Second) // idle: a few state polls, GC settled
	rss, err := vmRSS(u.pid)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
	}
	b.ReportMetric(float64(rss)/(1<<20), "idle-RSS-MiB")
	b.ReportMetric(float64(u.size)/(1<<20), "binary-MiB")
}

// BenchmarkIdleRSSDocker runs the updater with the docker provider watching
// 200 running containers (MYRIARCH_BENCH_CONTAINERS to change) of the
// private engine, waits until it has reported all of them to the server,
// idles and reads VmRSS; then it starts one more container and reports
// how long until the server receives a providers message naming it
// (start-to-message-ms). The goals (≤ 20 MB, ≤ 1.5 s) are in BENCHMARKS.md.
func BenchmarkIdleRSSDocker(b *testing.B) {
	n := 200
	if v := os.Getenv("MYRIARCH_BENCH_CONTAINERS"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil || n < 1 {
			b.Fatalf("MYRIARCH_BENCH_CONTAINERS=%q", v)
		}
	}
	cli := testenv.Docker(b)
	ctx := context.Background()
	image := "myriarch-bench-logger:1"
	if err := site.LoadLoggerImage(ctx, cli, image); err != nil {
		b.Fatal(err)
	}
	prefix := fmt.Sprintf("bench-%d-", time.Now().UnixNano()%1e6)
	var ids []string
	defer func() {
		for _, id := range ids {
			site.RemoveContainer(context.Background(), cli, id)
		}
	}()
	for i := range n {
		id, err := site.RunLogger(ctx, cli, image, fmt.Sprintf("%s%03d", prefix, i), 0)
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	var mu sync.Mutex
	var last []byte
	var lastAt time.Time
	u := startBenchUpdater(b, fmt.Sprintf("providers: {docker: {host: %q}}\n", os.Getenv("DOCKER_HOST")), func(m *protobufs.AgentToServer) {
		if cm := m.GetCustomMessage(); cm != nil && cm.Capability == providerwire.Capability {
			mu.Lock()
			last, lastAt = cm.Data, time.Now()
			mu.Unlock()
		}
	})
	reported := func(id string) (bool, time.Time) {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(string(last), id), lastAt
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if ok, _ := reported(ids[n-1]); ok {
			var w providerwire.Snapshot
			mu.Lock()
			json.Unmarshal(last, &w)
			mu.Unlock()
			if len(w.Dynamic["docker"]) >= n {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("the updater never reported %d containers", n)
		}
	}
	time.Sleep(10 * time.Second)
	rss, err := vmRSS(u.pid)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	id, err := site.RunLogger(ctx, cli, image, prefix+"late", 0)
	if err != nil {
		b.Fatal(err)
	}
	ids = append(ids, id)
	var latency time.Duration
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if ok, at := reported(id); ok {
			latency = at.Sub(start)
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the new container was never reported")
		}
	}
	for range b.N {
	}
	b.ReportMetric(float64(rss)/(1<<20), "idle-RSS-MiB")
	b.ReportMetric(float64(latency.Milliseconds()), "start-to-message-ms")
}

type benchUpdater struct {
	pid  int
	size int64
}

// startBenchUpdater builds the stripped binary, runs it against an
// opamp-go server on 127.0.0.1 (onMessage sees every message) with extra
// appended to its configuration, and waits until it has described itself.
func startBenchUpdater(b *testing.B, extra string, onMessage func(*protobufs.AgentToServer)) benchUpdater {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc/<pid>/status")
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "myriarch-updater")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		b.Fatal(err)
	}

	var described atomic.Bool
	srv := server.New(nil)
	err = srv.Start(server.StartSettings{ListenEndpoint: "127.0.0.1:0", Settings: server.Settings{
		CustomCapabilities: []string{providerwire.Capability},
		Callbacks: types.Callbacks{
			OnConnecting: func(*http.Request) types.ConnectionResponse {
				return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{
					OnMessage: func(_ context.Context, _ types.Connection, m *protobufs.AgentToServer) *protobufs.ServerToAgent {
						if m.AgentDescription != nil {
							described.Store(true)
						}
						if onMessage != nil {
							onMessage(m)
						}
						return &protobufs.ServerToAgent{InstanceUid: m.InstanceUid}
					},
				}}
			},
		}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Stop(context.Background()) })

	storage := filepath.Join(dir, "supervisor")
	if err := os.MkdirAll(storage, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(storage, "persistent_state.yaml"), []byte("instance_id: 01a23624-fe71-761b-9dc4-b4d1fba94a8f\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	cfg := filepath.Join(dir, "updater.yaml")
	// The install engine is enabled (no signature policy needed for that),
	// so its journal and worker are part of the measurement.
	body := fmt.Sprintf("server: {endpoint: \"ws://%s/v1/opamp\", token: bench}\nsupervisor: {storage_dir: %s}\n"+
		"collector: {root: %s}\ntrust: {require_signature: false}\nstate_dir: %s\nlog: {level: warn}\n%s",
		srv.Addr(), storage, filepath.Join(dir, "collector"), filepath.Join(dir, "state"), extra)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", cfg)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(30 * time.Second); !described.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("updater never reported its description")
		}
	}
	return benchUpdater{pid: cmd.Process.Pid, size: fi.Size()}
}

func vmRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
