package updater

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/mode/containermode/fakedocker"
)

func TestContainerModeReportsImageVersion(t *testing.T) {
	srv := startServer(t, 0)
	cfg := testConfig(t, srv.wsURL())
	cfg.Mode = config.ModeContainer
	cfg.Container.Name = "otelcol"
	cfg.Container.DockerHost = fakedocker.Serve(t, map[string]fakedocker.Container{
		"otelcol": {Ref: "otel/opentelemetry-collector-contrib:0.149.0"},
	})
	writeState(t, cfg.Supervisor.StorageDir, "instance_id: "+collectorUID1+"\n")
	runUpdater(t, newUpdater(t, cfg))
	sn := srv.waitFor(t, "the image version", func(s snapshot) bool { return s.nonIdentifying[AttrCollectorImageVersion] != "" })
	for k, want := range map[string]string{
		AttrInstallMode:           "container",
		AttrSupervisorService:     "otelcol",
		AttrCollectorImageVersion: "0.149.0",
		AttrCollectorInstanceUID:  collectorUID1,
	} {
		if sn.nonIdentifying[k] != want {
			t.Errorf("%s = %q, want %q", k, sn.nonIdentifying[k], want)
		}
	}
	if !sn.health.GetHealthy() {
		t.Errorf("health = %+v", sn.health)
	}
}

func TestContainerModeUnknownContainerIsUnhealthy(t *testing.T) {
	srv := startServer(t, 0)
	cfg := testConfig(t, srv.wsURL())
	cfg.Mode = config.ModeContainer
	cfg.Container.DockerHost = fakedocker.Serve(t, map[string]fakedocker.Container{})
	runUpdater(t, newUpdater(t, cfg))
	sn := srv.waitFor(t, "unhealthy", func(s snapshot) bool { return s.health != nil && !s.health.Healthy })
	if !strings.Contains(sn.health.LastError, "No such container") {
		t.Errorf("LastError = %q", sn.health.LastError)
	}
	if _, ok := sn.nonIdentifying[AttrCollectorImageVersion]; ok {
		t.Error("image version reported for a missing container")
	}
}

func TestProcessControlRunsSupervisor(t *testing.T) {
	srv := startServer(t, 0)
	cfg := testConfig(t, srv.wsURL())
	dir := t.TempDir()
	marker := filepath.Join(dir, "stopped-by-sigint")
	script := filepath.Join(dir, "fake-supervisor")
	// Writes its state like the supervisor would, and stops cleanly on SIGINT only.
	body := "#!/bin/sh\n" +
		"mkdir -p " + cfg.Supervisor.StorageDir + "\n" +
		"printf 'instance_id: " + collectorUID2 + "\\n' > " + cfg.Supervisor.StorageDir + "/.tmp && mv " + cfg.Supervisor.StorageDir + "/.tmp " + cfg.Supervisor.StorageDir + "/persistent_state.yaml\n" +
		"trap 'touch " + marker + "; exit 0' INT\n" +
		"trap '' TERM\n" +
		"while :; do sleep 0.05; done\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Supervisor.Control = config.ControlProcess
	cfg.Supervisor.Command = []string{script}
	u := newUpdater(t, cfg)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- u.Run(ctx) }()
	sn := srv.waitFor(t, "the supervisor's instance UID", func(s snapshot) bool {
		return s.nonIdentifying[AttrCollectorInstanceUID] == collectorUID2
	})
	if sn.nonIdentifying[AttrSupervisorService] != "fake-supervisor" {
		t.Errorf("supervisor service = %q", sn.nonIdentifying[AttrSupervisorService])
	}
	if u.Supervisor().PID() == 0 {
		t.Error("supervisor not running")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("supervisor not stopped with SIGINT: %v", err)
	}
	if pid := u.Supervisor().PID(); pid != 0 {
		t.Errorf("supervisor still running as %d", pid)
	}
}
