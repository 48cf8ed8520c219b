package providers

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/internal/vars"
)

const testImage = "myriarch-providers-test:latest"

// buildTestImage builds a FROM scratch image around a static Go binary that
// sleeps until SIGTERM: nothing is pulled.
func buildTestImage(t *testing.T, ctx context.Context, cli *client.Client) {
	t.Helper()
	dir := t.TempDir()
	src := `package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module sleeper\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", "app", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOFLAGS=-mod=mod -buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the test binary: %v\n%s", err, out)
	}
	bin, err := os.ReadFile(filepath.Join(dir, "app"))
	if err != nil {
		t.Fatal(err)
	}
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"Dockerfile", 0o644, []byte("FROM scratch\nCOPY app /app\nENTRYPOINT [\"/app\"]\n")},
		{"app", 0o755, bin},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := cli.ImageBuild(ctx, &tarball, client.ImageBuildOptions{Tags: []string{testImage}, Remove: true, ForceRemove: true, NetworkMode: "host"})
	if err != nil {
		t.Fatalf("image build: %v", err)
	}
	defer res.Body.Close()
	dec := json.NewDecoder(res.Body)
	for {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("image build output: %v", err)
		}
		if msg.Error != "" {
			t.Fatalf("image build: %s", msg.Error)
		}
	}
}

// startContainer runs the test image with host networking and labels; the
// container is removed when the test ends.
func startContainer(t *testing.T, ctx context.Context, cli *client.Client, name string, labels map[string]string) string {
	t.Helper()
	return createAndStart(t, ctx, cli, client.ContainerCreateOptions{
		Name:       name,
		Config:     &container.Config{Image: testImage, Labels: labels},
		HostConfig: &container.HostConfig{NetworkMode: "host"},
	})
}

// createAndStart creates and starts a container; it is removed when the
// test ends.
func createAndStart(t *testing.T, ctx context.Context, cli *client.Client, opts client.ContainerCreateOptions) string {
	t.Helper()
	created, err := cli.ContainerCreate(ctx, opts)
	if err != nil {
		t.Fatalf("create %s: %v", opts.Name, err)
	}
	t.Cleanup(func() {
		_, _ = cli.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true})
	})
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start %s: %v", opts.Name, err)
	}
	return created.ID
}

// waitFor reads published mapping lists until cond holds for one.
func waitFor(t *testing.T, ctx context.Context, sets <-chan []vars.Mapping, what string, cond func(map[string]vars.Mapping) bool) map[string]vars.Mapping {
	t.Helper()
	for {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s", what)
		case ms := <-sets:
			byID := map[string]vars.Mapping{}
			for _, m := range ms {
				byID[m.ID] = m
			}
			if cond(byID) {
				return byID
			}
		}
	}
}

// TestDockerProvider runs the provider against a real engine: a container
// running before it starts is listed, one started later arrives through
// events, and a stopped one is removed.
func TestDockerProvider(t *testing.T) {
	cli := testenv.Docker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	buildTestImage(t, ctx, cli)

	suffix := fmt.Sprintf("%d", time.Now().UnixNano())
	first := startContainer(t, ctx, cli, "myriarch-vars-a-"+suffix, map[string]string{"app": "web", "com.example.tier": "front"})

	p := &dockerProvider{host: os.Getenv("DOCKER_HOST"), retry: time.Second, log: discard()}
	sets := make(chan []vars.Mapping, 16)
	pctx, pcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(pctx, func(ms []vars.Mapping) { sets <- ms }) }()
	defer func() {
		pcancel()
		if err := <-done; err != nil {
			t.Errorf("provider returned %v", err)
		}
	}()

	byID := waitFor(t, ctx, sets, "the running container", func(m map[string]vars.Mapping) bool { _, ok := m[first]; return ok })
	m := byID[first]
	c := m.Vars["container"].(map[string]any)
	if c["id"] != first || c["name"] != "myriarch-vars-a-"+suffix {
		t.Errorf("container vars %v", c)
	}
	if img := c["image"].(map[string]any)["name"]; img != testImage {
		t.Errorf("image.name %v, want %s", img, testImage)
	}
	labels := c["labels"].(map[string]any)
	if labels["app"] != "web" || labels["com.example.tier"] != "front" {
		t.Errorf("labels %v", labels)
	}
	logPath, _ := m.Vars["paths"].(map[string]any)["log"].(string)
	if !strings.HasSuffix(logPath, first+"-json.log") {
		t.Errorf("paths.log %q is not the json-file log of %s", logPath, first)
	}
	if len(m.Processors) != 1 {
		t.Fatalf("processors %v", m.Processors)
	}
	af := m.Processors[0].(map[string]any)["add_fields"].(map[string]any)
	if af["target"] != "container" || af["fields"].(map[string]any)["id"] != first {
		t.Errorf("add_fields %v", af)
	}

	// Render through the engine: dotted labels are reachable nested.
	data, err := vars.NewData(nil, []vars.Mapping{{Provider: "docker", ID: m.ID, Vars: m.Vars, Processors: m.Processors}})
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := vars.Engine{}.RenderValue("${docker.container.labels.com.example.tier}", data)
	if err == nil {
		t.Errorf("context set must not see docker variables, got %v", v)
	}
	tm, _ := vars.Parse("${docker.container.labels.com.example.tier}/${docker.container.name}")
	v, _, err = tm.Render(data.MappingSet(0))
	if err != nil || v != "front/myriarch-vars-a-"+suffix {
		t.Errorf("render = %v, %v", v, err)
	}

	second := startContainer(t, ctx, cli, "myriarch-vars-b-"+suffix, nil)
	waitFor(t, ctx, sets, "the container started later", func(m map[string]vars.Mapping) bool {
		_, a := m[first]
		_, b := m[second]
		return a && b
	})

	zero := 0
	if _, err := cli.ContainerStop(ctx, first, client.ContainerStopOptions{Timeout: &zero}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, sets, "the stopped container to go", func(m map[string]vars.Mapping) bool {
		_, a := m[first]
		_, b := m[second]
		return !a && b
	})
}

// TestDockerProviderThroughManager checks the docker mappings reach a
// snapshot with their provider name and priority.
func TestDockerProviderThroughManager(t *testing.T) {
	cli := testenv.Docker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	buildTestImage(t, ctx, cli)
	id := startContainer(t, ctx, cli, fmt.Sprintf("myriarch-vars-m-%d", time.Now().UnixNano()), map[string]string{"k": "v"})
	s := firstSnapshot(t, Config{Agent: ToggleConfig{off()}, Host: HostConfig{Enabled: off()}, Env: EnvConfig{Enabled: off()},
		Local: LocalConfig{Enabled: off()}, LocalDynamic: LocalDynamicConfig{Enabled: off()}, Docker: DockerConfig{Host: os.Getenv("DOCKER_HOST")}}, Options{})
	for _, m := range s.Mappings {
		if m.ID == id {
			if m.Provider != "docker" || m.Priority != PriorityDocker {
				t.Fatalf("mapping %+v", m)
			}
			return
		}
	}
	t.Fatalf("container %s not in the first snapshot: %+v", id, s.Mappings)
}
