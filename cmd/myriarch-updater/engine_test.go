package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/updater"
)

// offeringServer offers one collector package to every agent and records
// the package statuses it gets back.
func offeringServer(t *testing.T) (url string, statuses func() *protobufs.PackageStatuses) {
	t.Helper()
	var (
		mu   sync.Mutex
		last *protobufs.PackageStatuses
	)
	offer := &protobufs.PackagesAvailable{
		AllPackagesHash: []byte{1},
		Packages: map[string]*protobufs.PackageAvailable{"otelcol-contrib": {
			Type: protobufs.PackageType_PackageType_Addon, Version: "0.150.0", Hash: []byte{2},
			File: &protobufs.DownloadableFile{DownloadUrl: "http://127.0.0.1:1/otelcol.tar.gz", ContentHash: make([]byte, 32)},
		}},
	}
	srv := server.New(nil)
	err := srv.Start(server.StartSettings{ListenEndpoint: "127.0.0.1:0", Settings: server.Settings{Callbacks: types.Callbacks{
		OnConnecting: func(*http.Request) types.ConnectionResponse {
			return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{
				OnMessage: func(_ context.Context, _ types.Connection, m *protobufs.AgentToServer) *protobufs.ServerToAgent {
					mu.Lock()
					defer mu.Unlock()
					if m.PackageStatuses != nil {
						last = m.PackageStatuses
					}
					resp := &protobufs.ServerToAgent{InstanceUid: m.InstanceUid,
						Capabilities: uint64(protobufs.ServerCapabilities_ServerCapabilities_AcceptsStatus | protobufs.ServerCapabilities_ServerCapabilities_OffersPackages)}
					if last.GetPackages()["otelcol-contrib"] == nil {
						resp.PackagesAvailable = offer // until the agent answers about it
					}
					return resp
				},
			}}
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	return fmt.Sprintf("ws://%s/v1/opamp", srv.Addr()), func() *protobufs.PackageStatuses {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

// TestRunWiresInstallEngine checks that `run` hands offers to the install
// engine when local policy allows installs, and refuses them otherwise.
func TestRunWiresInstallEngine(t *testing.T) {
	for _, tt := range []struct {
		name        string
		requireSig  bool
		wantRefusal bool
	}{
		{"engine enabled", false, false},
		{"signature required but no key", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, statuses := offeringServer(t)
			dir := t.TempDir()
			script := filepath.Join(dir, "supervisor.sh")
			if err := os.WriteFile(script, []byte("#!/bin/sh\ntrap 'exit 0' INT\nwhile :; do sleep 0.1; done\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			cfg := config.NewDefaultConfig()
			cfg.Server.Endpoint, cfg.Server.Token = url, "t"
			cfg.Supervisor.StorageDir = filepath.Join(dir, "storage")
			cfg.Supervisor.Control, cfg.Supervisor.Command = config.ControlProcess, []string{script}
			cfg.Collector.Root = filepath.Join(dir, "collector")
			cfg.StateDir = filepath.Join(dir, "state")
			cfg.Trust.RequireSignature = tt.requireSig

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- runUpdater(ctx, cfg, slog.New(slog.DiscardHandler), newOwnTelemetry(slog.New(slog.DiscardHandler), cfg.Trust))
			}()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("runUpdater = %v", err)
				}
			}()
			var st *protobufs.PackageStatus
			for deadline := time.Now().Add(30 * time.Second); st == nil; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("no package status reported")
				}
				st = statuses().GetPackages()["otelcol-contrib"]
			}
			refused := st.Status == protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed && st.ErrorMessage == updater.NotEnabledMessage
			if refused != tt.wantRefusal {
				t.Errorf("status = %v %q; want refusal %v", st.Status, st.ErrorMessage, tt.wantRefusal)
			}
			if !tt.wantRefusal && strings.Contains(st.ErrorMessage, "not enabled") {
				t.Errorf("engine did not take the offer: %q", st.ErrorMessage)
			}
		})
	}
}
