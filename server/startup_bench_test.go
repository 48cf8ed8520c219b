package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/store"
)

// BenchmarkStartup measures what `myriarchd serve` does before it answers
// (server.Run: server.New, then Start) with a data dir that holds 50 000
// collector+updater pairs (MYRIARCH_BENCH_PAIRS to change) as a rollout
// leaves them: descriptions, pairing and offer events, offer state (half
// the collectors back on the new version, half still offered). One op is
// New + Start until GET /api/v1/tokens answers 200, as the load generator
// waits for it; the graceful stop is outside the timer. heap-MB is the live
// heap after the first start (after a GC).
func BenchmarkStartup(b *testing.B) {
	pairs := 50000
	if s := os.Getenv("MYRIARCH_BENCH_PAIRS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("MYRIARCH_BENCH_PAIRS=%q: want a positive integer", s)
		}
		pairs = n
	}
	estateDir, dataDir := b.TempDir(), b.TempDir()
	// MYRIARCH_BENCH_DIR=D keeps the data dir and estate in D/data and
	// D/estate (built on the first run), e.g. to time `myriarchd serve` on them.
	keep := os.Getenv("MYRIARCH_BENCH_DIR")
	if keep != "" {
		estateDir, dataDir = filepath.Join(keep, "estate"), filepath.Join(keep, "data")
	}
	opts := server.Options{DataDir: dataDir, Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		Estate: estateDir, Log: slog.New(slog.DiscardHandler)}
	if _, err := os.Stat(filepath.Join(dataDir, "myriarch.db")); keep == "" || err != nil {
		buildRolledOutDataDir(b, opts, estateDir, pairs)
	}

	benchStart(b, opts, func(s *server.Server) {
		if got := len(s.Registry().List("", false)); got != 2*pairs {
			b.Fatalf("after the start the registry holds %d agents, want %d", got, 2*pairs)
		}
	})
}

// benchStart times New + Start until the admin API answers, as the load
// generator waits for it; check runs after the first start, outside the
// timer, as does the graceful stop. heap-MB is the live heap after the
// first start (after a GC).
func benchStart(b *testing.B, opts server.Options, check func(*server.Server)) {
	ctx := context.Background()
	var heap float64
	for i := 0; b.Loop(); i++ {
		s, err := server.New(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Start(); err != nil {
			b.Fatal(err)
		}
		waitAnswering(b, s)
		b.StopTimer()
		if i == 0 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			heap = float64(ms.HeapAlloc) / (1 << 20)
			check(s)
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		if err := s.Close(cctx); err != nil {
			b.Fatal(err)
		}
		cancel()
		b.StartTimer()
	}
	b.ReportMetric(heap, "heap-MB")
}

// waitAnswering polls the admin API the way the load generator does.
func waitAnswering(tb testing.TB, s *server.Server) {
	tb.Helper()
	url := "http://" + s.AdminAddr().String() + "/api/v1/tokens"
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+s.AdminToken())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			return
		}
	}
	tb.Fatal("the admin API did not answer within a minute")
}

// buildRolledOutDataDir registers pairs collector+updater pairs through the
// registry and the offers hook as opampsrv would, rolls the fleet out from
// 0.149.0 to 0.149.1, brings half the collectors back on the new version
// and closes the server so everything is in SQLite.
func buildRolledOutDataDir(tb testing.TB, opts server.Options, estateDir string, pairs int) {
	tb.Helper()
	writeBenchEstate(tb, estateDir, "0.149.0", "0.149.0", "0.149.1")
	s, err := server.New(context.Background(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	cred := store.Credential{Kind: "certificate", ID: "CN=load"}
	colCaps := uint64(protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth)
	updCaps := uint64(protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus | protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsPackageStatuses)
	report := func(uid uuid.UUID, msg *protobufs.AgentToServer) {
		if _, err := s.Registry().Report(uid, cred, msg, true, true); err != nil {
			tb.Fatal(err)
		}
		s.Offers().OnAgentMessage(uid, msg, &protobufs.ServerToAgent{})
	}
	colDesc := func(i int, col uuid.UUID, version string) *protobufs.AgentDescription {
		return &protobufs.AgentDescription{
			IdentifyingAttributes: kvs("service.name", pkgName, "service.version", version, "service.instance.id", col.String()),
			NonIdentifyingAttributes: kvs("host.name", fmt.Sprintf("host-%06d", i), "os.type", "linux", "host.arch", "amd64", "os.description", "Debian GNU/Linux 13 (trixie)",
				"site.type", "edge", "site.name", fmt.Sprintf("site-%03d", i%500), "site.region", fmt.Sprintf("region-%d", i%7)),
		}
	}
	cols := make([]uuid.UUID, pairs)
	for i := range pairs {
		col, upd := uuid.New(), uuid.New()
		cols[i] = col
		report(col, &protobufs.AgentToServer{Capabilities: colCaps, AgentDescription: colDesc(i, col, "0.149.0"),
			Health: &protobufs.ComponentHealth{Healthy: true, Status: "StatusOK", StartTimeUnixNano: uint64(time.Now().UnixNano())}})
		report(upd, &protobufs.AgentToServer{Capabilities: updCaps, AgentDescription: &protobufs.AgentDescription{
			IdentifyingAttributes: kvs("service.name", "myriarch-updater", "service.version", "0.1.0", "service.instance.id", upd.String()),
			NonIdentifyingAttributes: kvs("host.name", fmt.Sprintf("host-%06d", i), "os.type", "linux", "host.arch", "amd64", "os.description", "Debian GNU/Linux 13 (trixie)",
				"dev.myriarch.collector.instance_uid", col.String(), "dev.myriarch.install.mode", "binary"),
		}})
	}
	writeBenchEstate(tb, estateDir, "0.149.1")
	if err := s.ReloadEstate(); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < pairs; i += 2 {
		report(cols[i], &protobufs.AgentToServer{SequenceNum: 1, Capabilities: colCaps, AgentDescription: colDesc(i, cols[i], "0.149.1")})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		tb.Fatal(err)
	}
}
