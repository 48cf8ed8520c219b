package updater

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/agent/config"
)

// fakeContainer is a container and its image, as the Docker Engine API
// reports them.
type fakeContainer struct {
	Ref         string            // Config.Image: what the container names
	Labels      map[string]string // the image's labels
	ImageID     string            // default: derived from Ref
	RepoDigests []string
}

// fakeDocker serves the Docker Engine API calls the updater makes (ping,
// container and image inspect) on a unix socket.
func fakeDocker(t *testing.T, containers map[string]fakeContainer) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	images := map[string]fakeContainer{}
	for name, c := range containers {
		if c.ImageID == "" {
			c.ImageID = "sha256:" + strings.Repeat("0", 10) + name
		}
		containers[name], images[c.ImageID] = c, c
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/_ping", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		w.Write([]byte("OK"))
	})
	mux.HandleFunc("GET /containers/{name}/json", func(w http.ResponseWriter, r *http.Request) {
		c, ok := containers[r.PathValue("name")]
		if !ok {
			http.Error(w, `{"message":"No such container: `+r.PathValue("name")+`"}`, http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"Image": c.ImageID, "Config": map[string]any{"Image": c.Ref, "Labels": c.Labels}})
	})
	mux.HandleFunc("GET /images/{id}/json", func(w http.ResponseWriter, r *http.Request) {
		c, ok := images[r.PathValue("id")]
		if !ok {
			http.Error(w, `{"message":"No such image"}`, http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"Id": c.ImageID, "RepoDigests": c.RepoDigests, "Config": map[string]any{"Labels": c.Labels}})
	})
	// The client puts the negotiated API version first in every path.
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v, rest, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/"); ok && strings.HasPrefix(v, "v1.") {
			r.URL.Path = "/" + rest
		}
		mux.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "unix://" + sock
}

const versionLabel = "org.opencontainers.image.version"

var feed = "sha256:" + strings.Repeat("fe", 32)

func TestImageVersion(t *testing.T) {
	host := fakeDocker(t, map[string]fakeContainer{
		"labelled": {Ref: "otel/opentelemetry-collector-contrib:latest", Labels: map[string]string{versionLabel: "0.149.0"}},
		"tagged":   {Ref: "registry.local:5000/otel/otelcol-contrib:0.148.1@sha256:abcd"},
		"untagged": {Ref: "otel/otelcol-contrib"},
		"pulled": {Ref: "registry.local:5000/otel/otelcol:0.149.1", Labels: map[string]string{versionLabel: "0.149.1"},
			ImageID: "sha256:img1", RepoDigests: []string{"registry.local:5000/otel/otelcol@" + feed}},
		"loaded": {Ref: "otelcol:0.149.2", ImageID: "sha256:img2"},
	})
	ctx := context.Background()
	for name, want := range map[string]string{"labelled": "0.149.0", "tagged": "0.148.1"} {
		if got, err := imageVersion(ctx, host, name); err != nil || got.Version != want {
			t.Errorf("imageVersion(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
	if got, err := imageVersion(ctx, host, "pulled"); err != nil || got.Digest != feed || got.Version != "0.149.1" {
		t.Errorf("pulled image = %+v, %v; want the registry digest", got, err)
	}
	if got, err := imageVersion(ctx, host, "loaded"); err != nil || got.Digest != "sha256:img2" || got.Version != "0.149.2" {
		t.Errorf("loaded image = %+v, %v; want the image ID as digest", got, err)
	}
	if _, err := imageVersion(ctx, host, "untagged"); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("untagged: err = %v", err)
	}
	if _, err := imageVersion(ctx, host, "missing"); err == nil || !strings.Contains(err.Error(), "No such container") {
		t.Errorf("missing: err = %v", err)
	}
	if _, err := imageVersion(ctx, "npipe:////./pipe/docker_engine", "x"); err == nil {
		t.Error("npipe accepted on this platform")
	}
}

func TestContainerModeReportsImageVersion(t *testing.T) {
	srv := startServer(t, 0)
	cfg := testConfig(t, srv.wsURL())
	cfg.Mode = config.ModeContainer
	cfg.Container.Name = "otelcol"
	cfg.Container.DockerHost = fakeDocker(t, map[string]fakeContainer{
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
	cfg.Container.DockerHost = fakeDocker(t, map[string]fakeContainer{})
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
