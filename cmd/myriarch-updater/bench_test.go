package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"
)

// BenchmarkIdleRSS builds the stripped binary the way `make build` does,
// runs `myriarch-updater run` against an opamp-go server on 127.0.0.1 and
// reports its resident memory after it has connected and idled, plus the
// binary size. It measures; the goals (≤ 15 MB RSS, ≤ 20 MB binary) are
// tracked in BENCHMARKS.md, not asserted here.
func BenchmarkIdleRSS(b *testing.B) {
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
	err = srv.Start(server.StartSettings{ListenEndpoint: "127.0.0.1:0", Settings: server.Settings{Callbacks: types.Callbacks{
		OnConnecting: func(*http.Request) types.ConnectionResponse {
			return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{
				OnMessage: func(_ context.Context, _ types.Connection, m *protobufs.AgentToServer) *protobufs.ServerToAgent {
					if m.AgentDescription != nil {
						described.Store(true)
					}
					return &protobufs.ServerToAgent{InstanceUid: m.InstanceUid}
				},
			}}
		},
	}}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop(context.Background())

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
		"collector: {root: %s}\ntrust: {require_signature: false}\nstate_dir: %s\nlog: {level: warn}\n",
		srv.Addr(), storage, filepath.Join(dir, "collector"), filepath.Join(dir, "state"))
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", cfg)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	for deadline := time.Now().Add(30 * time.Second); !described.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("updater never reported its description")
		}
	}
	time.Sleep(10 * time.Second) // idle: a few state polls, GC settled

	rss, err := vmRSS(cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
	}
	b.ReportMetric(float64(rss)/(1<<20), "idle-RSS-MiB")
	b.ReportMetric(float64(fi.Size())/(1<<20), "binary-MiB")
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
