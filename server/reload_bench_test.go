package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/offers"
	"github.com/myriarch/myriarch/server/store"
)

// writeBenchEstate writes the load test's estate: one fleet (site.type
// edge) and catalog entries for the given versions.
func writeBenchEstate(tb testing.TB, dir, target string, versions ...string) {
	tb.Helper()
	for _, d := range []string{"inventory", "fleets", "packages/" + pkgName, "artifacts"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	write := func(rel, content string) {
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	for _, v := range versions {
		data := bytes.Repeat([]byte("collector "+v+"\n"), 100)
		art := fmt.Sprintf("artifacts/otelcol-contrib_%s_linux_amd64.tar.gz", v)
		write(art, string(data))
		sum := sha256.Sum256(data)
		write(fmt.Sprintf("packages/%s/%s.yaml", pkgName, v), fmt.Sprintf("name: %s\nversion: %s\nartifacts:\n  - {os: linux, arch: amd64, file: %s, sha256: %s, executable: otelcol-contrib}\n",
			pkgName, v, art, hex.EncodeToString(sum[:])))
	}
	write("fleets/edge.yaml", fmt.Sprintf("name: edge\npriority: 10\nselector: {site.type: edge}\npackage: %s\ntargetVersion: %s\n", pkgName, target))
}

// BenchmarkEstateReload measures POST /api/v1/estate/reload changing the
// fleet's targetVersion with every collector linked to an online updater
// (50 000 pairs by default, MYRIARCH_BENCH_PAIRS to change): myriarchd as
// assembled by server.New, SQLite included.
func BenchmarkEstateReload(b *testing.B) {
	pairs := 50000
	if s := os.Getenv("MYRIARCH_BENCH_PAIRS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("MYRIARCH_BENCH_PAIRS=%q: want a positive integer", s)
		}
		pairs = n
	}
	estateDir := b.TempDir()
	writeBenchEstate(b, estateDir, "0.149.0", "0.149.0", "0.149.1", "0.149.2")
	s, err := server.New(context.Background(), server.Options{DataDir: b.TempDir(), Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		Estate: estateDir, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.Close(ctx)
	}()
	cred := store.Credential{Kind: "certificate", ID: "CN=load"}
	colCaps := uint64(protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth)
	updCaps := uint64(protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus | protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsPackageStatuses)
	var agents []uuid.UUID
	for i := range pairs {
		host := fmt.Sprintf("host-%06d", i)
		col, upd := uuid.New(), uuid.New()
		agents = append(agents, col, upd)
		if _, err := s.Registry().Report(col, cred, &protobufs.AgentToServer{Capabilities: colCaps, AgentDescription: &protobufs.AgentDescription{
			IdentifyingAttributes: kvs("service.name", pkgName, "service.version", "0.149.0", "service.instance.id", col.String()),
			NonIdentifyingAttributes: kvs("host.name", host, "os.type", "linux", "host.arch", "amd64", "os.description", "Debian GNU/Linux 13 (trixie)",
				"site.type", "edge", "site.name", fmt.Sprintf("site-%03d", i%500), "site.region", fmt.Sprintf("region-%d", i%7)),
		}}, true, true); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Registry().Report(upd, cred, &protobufs.AgentToServer{Capabilities: updCaps, AgentDescription: &protobufs.AgentDescription{
			IdentifyingAttributes: kvs("service.name", "myriarch-updater", "service.version", "0.1.0", "service.instance.id", upd.String()),
			NonIdentifyingAttributes: kvs("host.name", host, "os.type", "linux", "host.arch", "amd64", "os.description", "Debian GNU/Linux 13 (trixie)",
				"dev.myriarch.collector.instance_uid", col.String(), "dev.myriarch.install.mode", "binary"),
		}}, true, true); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Registry().Flush(); err != nil {
		b.Fatal(err)
	}
	adminSrv := httptest.NewServer(s.Admin())
	defer adminSrv.Close()
	offered := func() int { return s.Offers().StateCounts()[offers.Offered] }

	// MYRIARCH_BENCH_POLLS=N keeps N plain-HTTP polls a second going (the
	// load test's 100 000 agents make 3 300): registry report, then the
	// offers hook, as opampsrv does for each.
	if v := os.Getenv("MYRIARCH_BENCH_POLLS"); v != "" {
		rate, err := strconv.Atoi(v)
		if err != nil || rate < 1 {
			b.Fatalf("MYRIARCH_BENCH_POLLS=%q: want a positive integer", v)
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		defer func() { close(stop); <-done }()
		go poll(s, cred, agents, rate, stop, done)
	}

	targets := []string{"0.149.1", "0.149.2"}
	var flush time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		writeBenchEstate(b, estateDir, targets[i%2])
		req, _ := http.NewRequest("POST", adminSrv.URL+"/api/v1/estate/reload", nil)
		req.Header.Set("Authorization", "Bearer "+s.AdminToken())
		b.StartTimer()
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("reload: %v %v", resp, err)
		}
		resp.Body.Close()
		b.StopTimer()
		// The offers' state and events are written behind; count that apart.
		t0 := time.Now()
		if err := s.Registry().Flush(); err != nil {
			b.Fatal(err)
		}
		flush += time.Since(t0)
		if n := offered(); n != pairs {
			b.Fatalf("after the reload %d collectors are offered, want %d", n, pairs)
		}
		b.StartTimer()
	}
	b.ReportMetric(flush.Seconds()/float64(b.N), "flush-s/op")
}

// poll sends rate heartbeats a second, round robin over agents, until stop.
func poll(s *server.Server, cred store.Credential, agents []uuid.UUID, rate int, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	seq := make([]uint64, len(agents))
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	next, start, sent := 0, time.Now(), 0
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		for due := int(time.Since(start).Seconds() * float64(rate)); sent < due; sent++ {
			i := next % len(agents)
			next++
			seq[i]++
			msg := &protobufs.AgentToServer{SequenceNum: seq[i]}
			if _, err := s.Registry().Report(agents[i], cred, msg, true, false); err == nil {
				s.Offers().OnAgentMessage(agents[i], msg, &protobufs.ServerToAgent{})
			}
		}
	}
}
