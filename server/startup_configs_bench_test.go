package server_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/store"
)

// BenchmarkStartupConfigs measures start until answering with 100 000
// collectors (MYRIARCH_BENCH_COLLECTORS to change) that each have a
// configuration assigned, desired and reported applied (500 distinct
// bodies, one per site), against BenchmarkStartup's figure with as many
// agents. One op is New + Start until GET /api/v1/tokens answers.
func BenchmarkStartupConfigs(b *testing.B) {
	n := envInt(b, "MYRIARCH_BENCH_COLLECTORS", 100000)
	estateDir, dataDir := b.TempDir(), b.TempDir()
	opts := server.Options{DataDir: dataDir, Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		Estate: estateDir, Log: slog.New(slog.DiscardHandler)}
	buildConfiguredDataDir(b, opts, estateDir, n, 500)
	benchStart(b, opts, func(s *server.Server) {
		if got := len(s.Registry().List("", false)); got != n {
			b.Fatalf("after the start the registry holds %d agents, want %d", got, n)
		}
	})
}

func envInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil || n < 1 {
		tb.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// buildConfiguredDataDir registers n collectors on the given number of
// sites (one body each) through the registry and the configuration hook as
// opampsrv would, has each report its desired configuration applied, and
// closes the server so everything is in SQLite.
func buildConfiguredDataDir(tb testing.TB, opts server.Options, estateDir string, n, sites int) {
	tb.Helper()
	for rel, content := range map[string]string{
		"teams/data-flow/blueprints/gw.yaml": configBlueprint,
		"fleets/edge.yaml":                   "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: data-flow/gw\n",
	} {
		p := filepath.Join(estateDir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	s, err := server.New(context.Background(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	cred := store.Credential{Kind: "certificate", ID: "CN=load"}
	caps := uint64(protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsRemoteConfig | protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth)
	for i := range n {
		uid := uuid.New()
		msg := &protobufs.AgentToServer{Capabilities: caps, AgentDescription: &protobufs.AgentDescription{
			IdentifyingAttributes: kvs("service.name", pkgName, "service.version", "0.149.0", "service.instance.id", uid.String()),
			NonIdentifyingAttributes: kvs("host.name", fmt.Sprintf("host-%06d", i), "os.type", "linux", "host.arch", "amd64",
				"site.type", "edge", "site.id", fmt.Sprintf("site-%05d", i%sites)),
		}}
		if _, err := s.Registry().Report(uid, cred, msg, true, false); err != nil {
			tb.Fatal(err)
		}
		resp := &protobufs.ServerToAgent{}
		s.Configs().OnAgentMessage(uid, msg, resp)
		rc := resp.GetRemoteConfig()
		if rc == nil {
			tb.Fatalf("collector %d was not sent its configuration", i)
		}
		st := &protobufs.AgentToServer{SequenceNum: 1, RemoteConfigStatus: &protobufs.RemoteConfigStatus{
			LastRemoteConfigHash: rc.ConfigHash, Status: protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED}}
		if _, err := s.Registry().Report(uid, cred, st, true, false); err != nil {
			tb.Fatal(err)
		}
		s.Configs().OnAgentMessage(uid, st, &protobufs.ServerToAgent{})
		if i == 0 && s.Configs().SyncState(uid) != "in_sync" {
			tb.Fatalf("collector 0 is %s after APPLIED %s", s.Configs().SyncState(uid), hex.EncodeToString(rc.ConfigHash))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		tb.Fatal(err)
	}
}
